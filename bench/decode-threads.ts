/**
 * `node dist/bench/decode-threads.js [--pods 10000] [--runs 3]` (after `npm run build`): would
 * decoding LIST pages on more than one thread shorten a LIST? A measurement, not a feature.
 *
 * This thread fetches the pages of 500 from the loopback server one after the other (each
 * requested as soon as the previous one's bytes are in, as the source does) and hands each page's
 * raw bytes (transferred, no copy) round-robin to T decoder threads, which `JSON.parse`, validate
 * and trim every pod (`parsePod`) and encode the trimmed pods as JSON, as the reflector's worker
 * does before posting them. T = 1 is today's reflector worker; the time is from the first request
 * to the last page decoded.
 */
import { availableParallelism, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { parseBenchArgs } from './bench-args.js';
import { ENGINE_NAMESPACE } from './engine-pod.js';
import { FakeListServer } from './fake-list-server.js';

const USAGE =
  'usage: node dist/bench/decode-threads.js [--pods N (10000)] [--runs N (3)] [--threads 1,2,3]';
const values = parseBenchArgs(
  {
    pods: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '3' },
    threads: { type: 'string', default: '1,2,3' },
  },
  USAGE,
);
const pods = Number(values.pods);
const runs = Number(values.runs);
const threadCounts = values.threads.split(',').map(Number);

const server = await FakeListServer.start({ pods });
server.prepare(500);
const script = new URL('./decode-thread-worker.js', import.meta.url);

async function once(threads: number): Promise<number> {
  const workers = Array.from({ length: threads }, () => new Worker(script));
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('online', resolve))));
  const t0 = performance.now();
  let pending = 0;
  let decoded = 0;
  let allSent = false;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  for (const worker of workers) {
    worker.on('message', (count: number) => {
      decoded += count;
      pending -= 1;
      if (allSent && pending === 0) done();
    });
  }
  let token: string | undefined;
  let page = 0;
  do {
    const query = new URLSearchParams({ limit: '500' });
    if (token) query.set('continue', token);
    const response = await fetch(
      `${server.url}/api/v1/namespaces/${ENGINE_NAMESPACE}/pods?${query}`,
    );
    const bytes = new Uint8Array(await response.arrayBuffer());
    // The continue token from the page's head, as http-pod-api's prefetch reads it.
    const head = Buffer.from(bytes.buffer, 0, Math.min(4096, bytes.length)).toString('latin1');
    token = /"continue":"([^"]+)"/.exec(head)?.[1];
    pending += 1;
    (workers[page % threads] as Worker).postMessage(bytes, [bytes.buffer]);
    page += 1;
  } while (token);
  allSent = true;
  if (pending === 0) done();
  await finished;
  const ms = performance.now() - t0;
  await Promise.all(workers.map((w) => w.terminate()));
  if (decoded !== pods) throw new Error(`decoded ${decoded} of ${pods}`);
  return ms;
}

process.stdout.write(
  `decode-threads — ${pods} pods in pages of 500, ${availableParallelism()} cores, load ${loadavg()
    .map((v) => v.toFixed(2))
    .join(' ')}\n`,
);
for (let run = 1; run <= runs; run += 1) {
  for (const threads of threadCounts) {
    process.stdout.write(
      `run ${run}: ${threads} decoder thread(s): ${(await once(threads)).toFixed(0)} ms\n`,
    );
  }
}
await server.close();
