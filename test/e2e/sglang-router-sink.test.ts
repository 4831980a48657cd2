/**
 * The SGLang router sink against real routers (smg 1.13.0 and sglang-router 0.3.2 from PyPI) and
 * fake engines on loopback, driven directly with hand-built routing states: no Kubernetes here.
 *
 * The sink never waits inside an apply; convergence is repeated applies (the coordinator's retry
 * and drift), which `converge` imitates with short intervals and a deadline.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RoutingState } from '../../src/pools/routing-state.js';
import { SglangRouterSink } from '../../src/sinks/sglang-router.js';
import { SinkApplyError } from '../../src/sinks/sink.js';
import { kubeEnvironmentRequired } from './environment/binaries.js';
import { type FakeEngine, startFakeEngine } from './environment/fake-engine.js';
import {
  ensureRouters,
  type RouterVersion,
  type RunningRouter,
  routersUnavailableReason,
  startRouter,
} from './environment/routers.js';
import { generate, type ListedWorker, listWorkers } from './support-routers.js';

const apiKey = 'e2e-router-key';
/** smg 1.13 drains a removed worker for ~5 s; a loaded machine gets margin. */
const convergeDeadlineMs = 30_000;
const applyIntervalMs = 100;

const unavailable = routersUnavailableReason();
if (unavailable && kubeEnvironmentRequired()) throw new Error(`e2e: ${unavailable}`);

function routing(pools: Record<string, FakeEngine[]>): RoutingState {
  return {
    pools: Object.entries(pools)
      .map(([pool, engines]) => ({
        namespace: 'e2e',
        pool,
        cells: engines
          .map((engine, i) => ({ cell: `${pool}-${i}`, generation: 'g1', address: engine.address }))
          .sort((a, b) => a.address.localeCompare(b.address)),
      }))
      .filter((p) => p.cells.length > 0),
  };
}

const urls = (engines: FakeEngine[]): string[] => engines.map((e) => e.url).sort();

/**
 * Applies `state` every applyIntervalMs until `router` lists exactly `expected` (none draining)
 * and the sink has nothing pending for it; returns how many applies it took.
 */
async function converge(
  sink: SglangRouterSink,
  state: RoutingState,
  router: RunningRouter,
  expected: string[],
): Promise<number> {
  const deadline = Date.now() + convergeDeadlineMs;
  let applies = 0;
  let last: ListedWorker[] = [];
  let lastError: unknown;
  while (Date.now() < deadline) {
    applies += 1;
    try {
      await sink.apply(state, new AbortController().signal);
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    last = await listWorkers(router, apiKey);
    const status = sink.status().find((s) => s.target === router.url);
    const clean = last.every((w) => w.status === undefined || w.status === 'ready');
    if (
      lastError === undefined &&
      clean &&
      JSON.stringify(last.map((w) => w.url).sort()) === JSON.stringify(expected) &&
      status?.pending.length === 0
    ) {
      return applies;
    }
    await new Promise((resolve) => setTimeout(resolve, applyIntervalMs));
  }
  throw new Error(
    `router ${router.version} did not converge to ${JSON.stringify(expected)}: lists ` +
      `${JSON.stringify(last)}, sink ${JSON.stringify(sink.status())}, last error ${String(lastError)}\n` +
      router.logTail(),
  );
}

const engines: FakeEngine[] = [];

describe.skipIf(unavailable !== undefined)('SGLang router sink against real routers', () => {
  beforeAll(async () => {
    // Installs the routers on a fresh machine (~30 s); the e2e hook timeout covers it.
    ensureRouters();
    for (let i = 0; i < 3; i += 1) engines.push(await startFakeEngine());
  });
  afterAll(async () => {
    await Promise.all(engines.splice(0).map((e) => e.stop()));
  });

  describe.each<[RouterVersion, boolean]>([
    ['smg-1.13.0', true],
    ['sglang-router-0.3.2', false],
  ])('%s', (version, full) => {
    let router: RunningRouter;
    let sink: SglangRouterSink;

    beforeAll(async () => {
      router = await startRouter({ version, apiKey });
      // `all`: these scenarios own the whole list (managed ownership: sink-guard-rails.test.ts).
      sink = new SglangRouterSink({
        targets: [{ pool: 'engine', url: router.url }],
        apiKey,
        ownership: 'all',
      });
    });
    afterAll(async () => {
      await router?.dispose();
    });

    it('lists exactly the desired cells and routes traffic to them', async () => {
      const [a, b] = engines as [FakeEngine, FakeEngine];
      await converge(sink, routing({ engine: [a, b] }), router, urls([a, b]));
      const before = a.traffic() + b.traffic();
      await generate(router, apiKey);
      expect(a.traffic() + b.traffic()).toBe(before + 1);
      expect(sink.status()[0]).toMatchObject({
        desired: urls([a, b]),
        actual: urls([a, b]),
        lastError: null,
      });
    });

    it('removes a cell and re-adds it without a drain race', async () => {
      const [a, b] = engines as [FakeEngine, FakeEngine];
      await converge(sink, routing({ engine: [a, b] }), router, urls([a, b]));
      // b goes away (one apply: DELETE sent; smg keeps it listed as draining), then comes back.
      await sink.apply(routing({ engine: [a] }), new AbortController().signal);
      await converge(sink, routing({ engine: [a, b] }), router, urls([a, b]));
      // Nothing undoes the re-add later (an old drain finishing would remove the URL again).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect((await listWorkers(router, apiKey)).map((w) => w.url).sort()).toEqual(urls([a, b]));
    });

    it('repopulates a restarted router on the next applies', async () => {
      const [a, b] = engines as [FakeEngine, FakeEngine];
      await converge(sink, routing({ engine: [a, b] }), router, urls([a, b]));
      await router.restart();
      expect(await listWorkers(router, apiKey)).toEqual([]);
      await converge(sink, routing({ engine: [a, b] }), router, urls([a, b]));
      await generate(router, apiKey);
    });

    // Only defined for smg 1.13 (the full set): 0.3.2 runs the core scenarios, and nothing is skipped.
    if (full)
      it('scales up and down', async () => {
        // From the previous test's [a, b]: up needs no drain, down one (smg drains removed workers ~5 s).
        const [a, b, c] = engines as [FakeEngine, FakeEngine, FakeEngine];
        await converge(sink, routing({ engine: [a, b, c] }), router, urls([a, b, c]));
        await converge(sink, routing({ engine: [b] }), router, urls([b]));
        const before = b.traffic();
        await generate(router, apiKey);
        expect(b.traffic()).toBe(before + 1);
      });

    if (full)
      it('with ownership all, removes a worker added by hand on the next apply', async () => {
        const [, b, c] = engines as [FakeEngine, FakeEngine, FakeEngine];
        await converge(sink, routing({ engine: [b] }), router, urls([b]));
        const response = await fetch(`${router.url}/workers`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
          body: JSON.stringify({ url: c.url }),
        });
        expect(response.status).toBe(202);
        const deadline = Date.now() + 10_000;
        while (!(await listWorkers(router, apiKey)).some((w) => w.url === c.url)) {
          expect(Date.now()).toBeLessThan(deadline);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await converge(sink, routing({ engine: [b] }), router, urls([b]));
      });
  });

  describe("smg-1.13.0's current contract", () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter({ version: 'smg-1.13.0', apiKey });
    });
    afterAll(async () => {
      await router?.dispose();
    });

    const post = (body: unknown): Promise<Response> =>
      fetch(`${router.url}/workers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(5_000),
      });

    it('refuses a worker URL whose scheme is not lowercase, so the sink sends only lowercase ones', async () => {
      const [a] = engines as [FakeEngine];
      const response = await post({ url: a.url.replace('http://', 'HTTP://') });
      expect(response.status, await response.text()).toBe(400);
      expect(a.url).toBe(a.url.toLowerCase());
    });

    it("never removes a worker carrying smg's discovery labels, even with ownership all", async () => {
      const [a, b, c] = engines as [FakeEngine, FakeEngine, FakeEngine];
      const logs: string[] = [];
      const sink = new SglangRouterSink({
        targets: [{ pool: 'engine', url: router.url }],
        apiKey,
        ownership: 'all',
        logger: {
          debug: () => {},
          info: () => {},
          warn: (_obj: unknown, msg: string) => logs.push(msg),
          error: () => {},
        },
      });
      const response = await post({
        url: c.url,
        labels: { 'smg.ai/pod-name': 'engine-c', 'smg.ai/pod-uid': 'c-uid' },
      });
      expect(response.status, await response.text()).toBe(202);
      await converge(sink, routing({ engine: [a, b] }), router, urls([a, b, c]));
      for (let i = 0; i < 3; i += 1)
        await sink.apply(routing({ engine: [a, b] }), new AbortController().signal);
      expect((await listWorkers(router, apiKey)).map((w) => w.url).sort()).toEqual(urls([a, b, c]));
      expect(logs.filter((m) => m.includes("smg's own Kubernetes discovery"))).toHaveLength(1);
    });
  });

  describe('two smg-1.13.0 routers, one down', () => {
    let up: RunningRouter;
    let down: RunningRouter;
    beforeAll(async () => {
      [up, down] = await Promise.all([
        startRouter({ version: 'smg-1.13.0', apiKey }),
        startRouter({ version: 'smg-1.13.0', apiKey }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([up?.dispose(), down?.dispose()]);
    });

    it('converges the reachable router, names only the unreachable one, then converges it when back', async () => {
      const [a, b] = engines as [FakeEngine, FakeEngine];
      const sink = new SglangRouterSink({
        targets: [
          { pool: 'alpha', url: up.url },
          { pool: 'beta', url: down.url },
        ],
        apiKey,
      });
      const state = routing({ alpha: [a], beta: [b] });
      await down.stop();
      const error = await sink.apply(state, new AbortController().signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SinkApplyError);
      expect((error as SinkApplyError).failures.map((f) => f.target)).toEqual([down.url]);
      expect((error as SinkApplyError).message).not.toContain(apiKey);

      const deadline = Date.now() + convergeDeadlineMs;
      while (
        JSON.stringify((await listWorkers(up, apiKey)).map((w) => w.url)) !==
        JSON.stringify([a.url])
      ) {
        expect(Date.now()).toBeLessThan(deadline);
        await sink.apply(state, new AbortController().signal).catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, applyIntervalMs));
      }
      expect(sink.status().find((s) => s.target === down.url)?.lastError).toMatch(/GET \/workers/);

      await down.start();
      await converge(sink, state, down, [b.url]);
      await converge(sink, state, up, [a.url]);
      expect(sink.status().every((s) => s.lastError === null)).toBe(true);
    });
  });

  afterAll(() => {
    // Anything a router called that the fake engine could not answer shows here.
    const unknown = [...new Set(engines.flatMap((e) => e.unknown))];
    if (unknown.length > 0)
      console.log(`e2e: fake engines had no answer for: ${unknown.join(', ')}`);
  });
});
