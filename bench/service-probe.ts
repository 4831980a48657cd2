/**
 * What the black-box benches (`bench:api -- --hostile`, `bench:sizing`) need to drive the built
 * service as a separate process: a free loopback port to give it, an HTTP status or a metric read
 * the way a kubelet probe or a Prometheus scrape would, a bounded wait for a condition, and the
 * IPC questions bench/service-with-gc.ts answers. Benches run on real time by design (they measure
 * it), so these use real timers; the service under test still runs on its own clock.
 */
import type { ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { createServer } from 'node:net';

/** How often `waitFor` checks again: quick beside a service start, cheap beside a sync. */
const POLL_INTERVAL_MS = 100;
/** Long enough for a 150,000-pod sync on a loaded 2-core machine; a hang still ends the bench. */
export const DEFAULT_WAIT_MS = 180_000;

/** A loopback port nothing listens on now, for the service's `--listen` flags. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The status of a GET on a fresh connection, 0 when nothing answered (not yet listening). */
export function httpStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    get(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', () => resolve(0));
  });
}

/**
 * Resolves once `check` holds; throws naming `what` after `ms`, so a stuck run says why. `pollMs`:
 * how long between checks (`POLL_INTERVAL_MS`); a measurement of when it first holds polls faster.
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  ms = DEFAULT_WAIT_MS,
  pollMs = POLL_INTERVAL_MS,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** The first sample of metric `name` in the service's `/metrics`, NaN when it has none. */
export async function scrapeMetric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : Number.NaN;
}

/** What bench/service-with-gc.ts answers about the service's own process. */
export interface ServiceAnswer {
  rss: number;
  heapUsed?: number;
  /** With `rss`: V8's heap as reserved, and memory outside it (Buffers' bytes among it). */
  heapTotal?: number;
  external?: number;
  arrayBuffers?: number;
  loopP99Ms?: number;
  loopMaxMs?: number;
}

/**
 * Asks a service forked from bench/service-with-gc.ts about itself. Questions queue, one at a
 * time per child, because the answers carry no question to match them by.
 */
export class ServiceQuestions {
  #asking: Promise<unknown> = Promise.resolve();
  constructor(private readonly child: ChildProcess) {}

  ask(question: 'rss' | 'gc' | 'loop'): Promise<ServiceAnswer> {
    const answer = this.#asking.then(
      () =>
        new Promise<ServiceAnswer>((resolve) => {
          this.child.once('message', (a) => resolve(a as ServiceAnswer));
          this.child.send(question);
        }),
    );
    this.#asking = answer;
    return answer;
  }
}
