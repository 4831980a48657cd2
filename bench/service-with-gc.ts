/**
 * The built service (`dist/src/main.js`) run by `bench:api -- --hostile` and `bench:sizing`,
 * answering its parent's IPC questions about itself: `rss` (sampled during the load, with the
 * heap's and the Buffers' share, to tell which one grows),
 * `loop` (its event-loop delay p99 and max since the last `loop`) and `gc` (a full collection
 * first, then RSS and the heap used: the heap after GC, asked only between phases, since a
 * collection pauses the process). Arguments are the service's flags.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { memoryUsage } from 'node:process';
import { forcedGc } from './forced-gc.js';

/** The service's own event-loop delay, to tell a blocked process from a busy machine. */
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

const gc = forcedGc();

process.on('message', (message) => {
  if (message === 'rss') {
    const { rss, heapTotal, heapUsed, external, arrayBuffers } = memoryUsage();
    process.send?.({ rss, heapTotal, heapUsed, external, arrayBuffers });
  } else if (message === 'loop') {
    process.send?.({
      rss: memoryUsage.rss(),
      loopP99Ms: loop.percentile(99) / 1e6,
      loopMaxMs: loop.max / 1e6,
    });
    loop.reset();
  } else if (message === 'gc') {
    gc();
    gc();
    const usage = memoryUsage();
    process.send?.({ rss: usage.rss, heapUsed: usage.heapUsed });
  }
});
// The channel must not keep the process alive once the service has stopped.
process.channel?.unref();
await import('../src/main.js');
