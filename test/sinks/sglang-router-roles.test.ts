/**
 * The SGLang router sink with prefill/decode routers (`--sglang-router POOL=URL,role=…`): one
 * router, two targets, each owning the router's workers of its type. The fake router keeps and
 * lists `worker_type` and `bootstrap_port` as smg 1.13 and sglang-router 0.3.2 do.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  routerTargetClash,
  SglangRouterSink,
  type SglangRouterTarget,
  WORKER_MARK_LABEL,
  WORKER_MARK_VALUE,
} from '../../src/sinks/sglang-router.js';
import { FakeSglangRouter, type FakeSglangRouterOptions } from '../support/fake-sglang-router.js';

const routers: FakeSglangRouter[] = [];
afterEach(async () => {
  await Promise.all(routers.splice(0).map((r) => r.stop()));
});

async function router(options: FakeSglangRouterOptions = {}): Promise<FakeSglangRouter> {
  const fake = new FakeSglangRouter({ autoComplete: true, ...options });
  await fake.start();
  routers.push(fake);
  return fake;
}

/** Pools of cells on 10.0.0.1 at the given ports, each with an optional bootstrap port. */
function state(pools: Record<string, Array<[number, number?]>>): RoutingState {
  return {
    pools: Object.entries(pools).map(([pool, cells]) => ({
      namespace: 'inference',
      pool,
      cells: cells.map(([port, bootstrapPort], i) => ({
        cell: `${pool}-${i}`,
        generation: 'g1',
        address: `10.0.0.1:${port}`,
        ...(bootstrapPort === undefined ? {} : { bootstrapPort }),
      })),
    })),
  };
}

const w = (port: number): string => `http://10.0.0.1:${port}`;
/** The mark of a worker this sink added earlier (`--sglang-router-ownership managed`). */
const labels = { [WORKER_MARK_LABEL]: WORKER_MARK_VALUE };
const signal = (): AbortSignal => new AbortController().signal;

function pdSink(fake: FakeSglangRouter): SglangRouterSink {
  return new SglangRouterSink({
    targets: [
      { pool: 'prefill', url: fake.url, role: 'prefill' },
      { pool: 'decode', url: fake.url, role: 'decode' },
    ],
    wallClock: () => new Date('2026-01-02T03:04:05.000Z'),
  });
}

/** What the router lists: `url type [bootstrap]`, sorted. */
function listed(fake: FakeSglangRouter): string[] {
  return fake
    .workers()
    .filter((worker) => worker.state === 'ready')
    .map((worker) =>
      [worker.url, worker.workerType, worker.bootstrapPort]
        .filter((p) => p !== undefined)
        .join(' '),
    )
    .sort();
}

describe('SglangRouterSink: prefill/decode routers', () => {
  it('registers prefill cells as prefill workers with their bootstrap port, decode cells as decode workers', async () => {
    const fake = await router();
    const sink = pdSink(fake);
    await sink.apply(state({ prefill: [[8000, 8998]], decode: [[9000], [9001]] }), signal());
    expect(fake.requests.filter((r) => r.startsWith('POST')).sort()).toEqual([
      `POST /workers ${w(8000)} prefill bootstrap=8998`,
      `POST /workers ${w(9000)} decode`,
      `POST /workers ${w(9001)} decode`,
    ]);
    expect(listed(fake)).toEqual([
      `${w(8000)} prefill 8998`,
      `${w(9000)} decode`,
      `${w(9001)} decode`,
    ]);

    // Converged: the next apply only lists.
    fake.clearRequests();
    await sink.apply(state({ prefill: [[8000, 8998]], decode: [[9000], [9001]] }), signal());
    expect(fake.requests).toEqual(['GET /workers', 'GET /workers']);
  });

  it('shows one status per role, each with only the workers of its type', async () => {
    const fake = await router();
    const sink = pdSink(fake);
    const desired = state({ prefill: [[8000, 8998]], decode: [[9000]] });
    await sink.apply(desired, signal());
    await sink.apply(desired, signal());
    expect(
      sink.status().map(({ target, pool, role, desired, actual, pending }) => ({
        target,
        pool,
        role,
        desired,
        actual,
        pending,
      })),
    ).toEqual([
      {
        target: fake.url,
        pool: 'prefill',
        role: 'prefill',
        desired: [w(8000)],
        actual: [w(8000)],
        pending: [],
      },
      {
        target: fake.url,
        pool: 'decode',
        role: 'decode',
        desired: [w(9000)],
        actual: [w(9000)],
        pending: [],
      },
    ]);
  });

  it('replaces a prefill worker whose bootstrap port changed: removed, then added once gone', async () => {
    const fake = await router();
    const sink = pdSink(fake);
    await sink.apply(state({ prefill: [[8000, 8998]], decode: [] }), signal());
    fake.clearRequests();

    await sink.apply(state({ prefill: [[8000, 8999]], decode: [] }), signal());
    // The router refuses a second registration of the URL (409), so no add while it is listed.
    expect(fake.requests.filter((r) => !r.startsWith('GET'))).toEqual([
      expect.stringMatching(/^DELETE \/workers\//),
    ]);
    fake.finishDrains();
    fake.clearRequests();
    await sink.apply(state({ prefill: [[8000, 8999]], decode: [] }), signal());
    expect(fake.requests.filter((r) => !r.startsWith('GET'))).toEqual([
      `POST /workers ${w(8000)} prefill bootstrap=8999`,
    ]);
    expect(listed(fake)).toEqual([`${w(8000)} prefill 8999`]);
  });

  it('moves a worker listed as the other type, or as a regular worker, to the desired type', async () => {
    const fake = await router();
    fake.addByHand(w(8000), { labels, workerType: 'decode' });
    fake.addByHand(w(9000), { labels, workerType: 'regular' });
    const sink = pdSink(fake);
    const desired = state({ prefill: [[8000, 8998]], decode: [[9000]] });
    await sink.apply(desired, signal());
    fake.finishDrains();
    await sink.apply(desired, signal());
    expect(listed(fake)).toEqual([`${w(8000)} prefill 8998`, `${w(9000)} decode`]);
  });

  it('removes the undesired workers of its own type only: a regular worker nobody desires stays', async () => {
    const fake = await router();
    fake.addByHand(w(7000), { labels, workerType: 'regular' });
    fake.addByHand(w(8001), { labels, workerType: 'prefill', bootstrapPort: 1234 });
    fake.addByHand(w(9001), { labels, workerType: 'decode' });
    const sink = pdSink(fake);
    await sink.apply(state({ prefill: [[8000, 8998]], decode: [[9000]] }), signal());
    fake.finishDrains();
    expect(listed(fake)).toEqual([
      `${w(7000)} regular`,
      `${w(8000)} prefill 8998`,
      `${w(9000)} decode`,
    ]);
  });

  it('a plain router wants regular workers: a prefill worker at a desired URL is replaced', async () => {
    const fake = await router();
    fake.addByHand(w(8000), { labels, workerType: 'prefill', bootstrapPort: 8998 });
    const sink = new SglangRouterSink({ targets: [{ pool: 'engine', url: fake.url }] });
    await sink.apply(state({ engine: [[8000]] }), signal());
    fake.finishDrains();
    await sink.apply(state({ engine: [[8000]] }), signal());
    expect(listed(fake)).toEqual([`${w(8000)} regular`]);
    expect(fake.requests.filter((r) => r.startsWith('POST'))).toEqual([`POST /workers ${w(8000)}`]);
  });

  it('leaves an unmarked worker of the wrong type at a desired URL in place (managed)', async () => {
    const fake = await router();
    fake.addByHand(w(8000), { workerType: 'decode' }); // added by hand: not this sink's to remove
    const sink = pdSink(fake);
    await sink.apply(state({ prefill: [[8000, 8998]], decode: [] }), signal());
    expect(fake.requests.filter((r) => r.startsWith('DELETE'))).toEqual([]);
    expect(listed(fake)).toEqual([`${w(8000)} decode`]);
  });

  it('holds one role of a router by its own backoff: a failed prefill add does not hold decode', async () => {
    const fake = await router();
    const sink = pdSink(fake);
    fake.failWith = 500;
    fake.failOnly = 'POST';
    await expect(
      sink.apply(state({ prefill: [[8000, 8998]], decode: [] }), signal()),
    ).rejects.toThrow(/prefill|POST/);
    fake.failWith = undefined;
    fake.clearRequests();
    // The prefill target is held; the decode target is called at once.
    await expect(
      sink.apply(state({ prefill: [[8000, 8998]], decode: [[9000]] }), signal()),
    ).rejects.toThrow(/not called until/);
    expect(fake.requests.filter((r) => r.startsWith('POST'))).toEqual([
      `POST /workers ${w(9000)} decode`,
    ]);
    const [prefill, decode] = sink.status();
    expect(prefill?.backoffUntil).not.toBeNull();
    expect(decode?.backoffUntil).toBeNull();
  });

  it('refuses a router for two pools unless they are one prefill and one decode pool', () => {
    const url = 'http://r:1';
    const clash = (a: SglangRouterTarget, b: SglangRouterTarget) => routerTargetClash([a], b);
    expect(clash({ pool: 'p', url, role: 'prefill' }, { pool: 'd', url, role: 'decode' })).toBe(
      undefined,
    );
    expect(
      clash({ pool: 'p', url, role: 'prefill' }, { pool: 'q', url: `${url}/`, role: 'prefill' }),
    ).toMatch(/pools p \(prefill\) and q \(prefill\); a router serves one pool/);
    expect(clash({ pool: 'a', url }, { pool: 'd', url, role: 'decode' })).toMatch(
      /pools a and d \(decode\)/,
    );
    expect(clash({ pool: 'a', url }, { pool: 'b', url: 'http://r:2' })).toBeUndefined();
    expect(
      () =>
        new SglangRouterSink({
          targets: [
            { pool: 'a', url, role: 'decode' },
            { pool: 'b', url, role: 'decode' },
          ],
        }),
    ).toThrow(/one prefill and one decode pool/);
  });
});
