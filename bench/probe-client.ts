/**
 * A prober in a process of its own, as the kubelet is: `GET /healthz` on each URL given, one at a
 * time every `PROBE_INTERVAL_MS`, each on a fresh connection, until SIGTERM; then one JSON line on
 * stdout per URL with the latencies' p50, p99 and max, and the failures. Used by
 * `bench:api -- --hostile`, so the load's own clients never delay the measurement.
 */
import { request } from 'node:http';

/** The kubelet probes every few seconds; 10 per second gives a p99 worth reading in a minute. */
const PROBE_INTERVAL_MS = 100;
/** A probe that takes longer counts as failed (the kubelet's default timeout is 1 s). */
const PROBE_TIMEOUT_MS = 1_000;

const urls = process.argv.slice(2);
const samples = new Map<string, number[]>(urls.map((u) => [u, []]));
const failures = new Map<string, number>(urls.map((u) => [u, 0]));
/** Probes over 50 ms: seconds since the start and how long they took, to see when they happen. */
const slow = new Map<string, Array<[number, number]>>(urls.map((u) => [u, []]));
const begun = performance.now();
const reasons = new Map<string, number>();
let stopping = false;

function probe(url: string): Promise<void> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(url, { agent: false, timeout: PROBE_TIMEOUT_MS }, (res) => {
      res.resume();
      res.on('end', () => {
        const took = performance.now() - started;
        if (res.statusCode === 200) {
          samples.get(url)!.push(took);
        } else {
          failures.set(url, failures.get(url)! + 1);
          const reason = `HTTP ${res.statusCode}`;
          reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
        }
        if (took > 50) {
          slow.get(url)!.push([Math.round((started - begun) / 100) / 10, Math.round(took)]);
        }
        resolve();
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      failures.set(url, failures.get(url)! + 1);
      const reason = error.code ?? error.message;
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      resolve();
    });
    req.end();
  });
}

function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

process.once('SIGTERM', () => {
  stopping = true;
});
while (!stopping) {
  for (const url of urls) await probe(url);
  await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
}
for (const url of urls) {
  const sorted = samples.get(url)!.sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify({
      url,
      probes: sorted.length,
      failures: failures.get(url),
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      maxMs: sorted.at(-1) ?? null,
      slow: slow.get(url)!.slice(0, 30),
      reasons: Object.fromEntries(reasons),
    })}\n`,
  );
}
