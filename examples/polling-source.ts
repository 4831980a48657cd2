/**
 * A ReconcileLoop over a polled HTTP endpoint: docs/library.md's polling example, runnable.
 * `npm run build && node dist/examples/polling-source.js http://127.0.0.1:8080/jobs` polls the
 * URL (a JSON array of `{ name, queue, state }`), reconciles each queue whenever its jobs change,
 * and stops on SIGINT or SIGTERM, after which the process exits by itself. Against a server that
 * does not answer, `start()` gives up after `syncTimeoutMs` with the reason.
 */
import { ReconcileLoop, realClock, type Source } from '../src/index.js';

interface Job {
  name: string;
  queue: string;
  state: string;
}

/** How often the endpoint is read: the longest a change waits before the loop sees it. */
const POLL_INTERVAL_MS = 1_000;
/** How long `start()` waits for the first successful poll before it rejects. */
const SYNC_TIMEOUT_MS = 5_000;

// Each call opens a fresh stream; every stream starts with the whole world (a `replace`).
function pollingSource(url: string): Source<Job> {
  return async function* (signal) {
    let last: string | undefined;
    for (;;) {
      // `signal` aborts when the loop is done with this stream: the request and the sleep end at
      // once, instead of at the next `yield`, which a quiet endpoint may never reach.
      const response = await fetch(url, { signal });
      if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
      const body = await response.text();
      if (body !== last) {
        last = body;
        const jobs = JSON.parse(body) as Job[];
        yield { type: 'replace', objects: new Map(jobs.map((job) => [job.name, job])) };
      }
      await realClock.sleep(POLL_INTERVAL_MS, signal);
    }
  };
}

const url = process.argv[2] ?? 'http://127.0.0.1:8080/jobs';
const loop = new ReconcileLoop<Job>({
  source: pollingSource(url),
  keyMap: (job) => job.queue,
  reconcile: async (queue) => {
    // Level-triggered: read the queue's jobs as they are now; the change that woke us is not given.
    const jobs = loop.getByParent(queue).map((job) => `${job.name}=${job.state}`);
    console.log(`${queue}: ${jobs.join(' ') || '(no jobs)'}`);
  },
  syncTimeoutMs: SYNC_TIMEOUT_MS,
  // No `logger`: the first failed poll raises one POOL_CONTROLLER_NO_LOGGER warning. Pass a
  // pino logger (or anything with debug/info/warn/error) to see every failure.
});

try {
  await loop.start();
  console.log(`synced from ${url}`);
  const stop = async (): Promise<void> => {
    await loop.stop();
    console.log('stopped');
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  // InitialSyncTimeoutError: its message and its `cause` carry the last failed poll.
  console.error(`not started: ${(error as Error).message}`);
  process.exitCode = 1;
}
