/**
 * `npm run bench:events`: what the event stream's history costs the publisher. Every event the
 * service publishes is now serialized (with its id and time) into the bounded history whether or
 * not a client is connected, so a relist that changes every cell pays one serialization per cell.
 * This publishes `--events` `cell.changed` events shaped like a real one (a not-alive cell with
 * reasons), with no stream open and then with `--streams` streams reading, and prints the
 * publisher's time per event and what the history holds (its bytes are what it keeps in memory,
 * as shared buffers).
 *
 * Targets: at most 20 µs per event with no stream (10,000 cells changing cost the main thread
 * under 0.2 s), and the history within its bounds (1,024 events, 512 KiB) however many are
 * published. `--strict` exits 1 on a missed target. Runs in-process, nothing on the network.
 */
import { performance } from 'node:perf_hooks';
import { EventBus } from '../src/coordination/event-bus.js';
import { realClock } from '../src/runtime/clock.js';
import { EVENT_HISTORY_BYTES, EVENT_HISTORY_EVENTS } from '../src/service/event-history.js';
import { EventStreams } from '../src/service/event-stream.js';
import type { ServiceEvent } from '../src/service/service-events.js';
import { parseBenchArgs } from './bench-args.js';

const USAGE = `usage: npm run bench:events -- [--events N] [--streams N] [--strict]
  --events N   cell.changed events published per run (default 10000)
  --streams N  streams reading in the second run (default 8)
  --strict     exit 1 when a target is missed`;

const args = parseBenchArgs(
  {
    events: { type: 'string', default: '10000' },
    streams: { type: 'string', default: '8' },
    strict: { type: 'boolean', default: false },
  },
  USAGE,
);
const EVENTS = Number(args.events);
const STREAMS = Number(args.streams);
if (!(Number.isInteger(EVENTS) && EVENTS > 0 && Number.isInteger(STREAMS) && STREAMS >= 0)) {
  process.stderr.write(`--events and --streams must be whole numbers\n${USAGE}\n`);
  process.exit(2);
}
/** The publisher's budget per event with no stream open. */
const NO_STREAM_TARGET_US = 20;

function cellChanged(i: number): ServiceEvent {
  const id = `engine-${String(i).padStart(5, '0')}`;
  return {
    type: 'cell.changed',
    cell: id,
    namespace: 'serving',
    pool: 'engine',
    change: 'not-alive',
    alive: false,
    whyNotAlive: [
      {
        reason: 'PodsNotReady',
        message: `pods not ready: ${id}-0, ${id}-1`,
        pods: [`${id}-0`, `${id}-1`],
      },
    ],
    generation: (i * 2654435761).toString(16).padStart(16, '0').slice(0, 16),
    address: `10.0.${(i >> 8) & 255}.${i & 255}:30000`,
    routable: false,
    whyNotRoutable: [],
  };
}

async function run(streams: number): Promise<{ usPerEvent: number; size: number; bytes: number }> {
  const events = Array.from({ length: EVENTS }, (_, i) => cellChanged(i));
  const bus = new EventBus<ServiceEvent>();
  const eventStreams = new EventStreams({
    bus,
    clock: realClock,
    maxStreams: Math.max(1, streams),
  });
  const abort = new AbortController();
  const readers = Array.from({ length: streams }, () => {
    const stream = eventStreams.open({ signal: abort.signal })!;
    stream.resume();
    return stream;
  });
  const started = performance.now();
  for (const event of events) bus.publish(event);
  const elapsed = performance.now() - started;
  const { size, bytes } = eventStreams.history;
  abort.abort();
  eventStreams.close();
  for (const reader of readers) reader.destroy();
  return { usPerEvent: (elapsed * 1000) / EVENTS, size, bytes };
}

// One run unmeasured first: the serializer's code is optimized before the measured runs.
await run(0);
const alone = await run(0);
const read = await run(STREAMS);

const lines = [
  `events published per run: ${EVENTS}`,
  `no stream open:   ${alone.usPerEvent.toFixed(2)} µs per event (target ≤ ${NO_STREAM_TARGET_US})`,
  `${STREAMS} streams reading: ${read.usPerEvent.toFixed(2)} µs per event`,
  `history held: ${alone.size} events, ${alone.bytes} bytes (bounds ${EVENT_HISTORY_EVENTS}, ${EVENT_HISTORY_BYTES})`,
];
process.stdout.write(`${lines.join('\n')}\n`);
const missed =
  alone.usPerEvent > NO_STREAM_TARGET_US ||
  alone.size > EVENT_HISTORY_EVENTS ||
  alone.bytes > EVENT_HISTORY_BYTES;
if (missed) process.stdout.write('target missed\n');
if (missed && args.strict) process.exitCode = 1;
