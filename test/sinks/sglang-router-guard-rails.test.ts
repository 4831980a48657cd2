/**
 * The router sink's guard rails: ownership (`managed` removes only what it marked, `all` any
 * worker it does not desire, `record` on a router that keeps no labels), panic (nothing removed,
 * still added) and observe mode (reads only, reports the diff once per change).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PoolRouting, RoutingState } from '../../src/pools/routing-state.js';
import {
  SglangRouterSink,
  type SglangRouterSinkOptions,
  WORKER_MARK_LABEL,
  WORKER_MARK_VALUE,
} from '../../src/sinks/sglang-router.js';
import type { SinkEvent } from '../../src/sinks/sink.js';
import { FakeSglangRouter, type FakeSglangRouterOptions } from '../support/fake-sglang-router.js';
import { RecordingLogger } from '../support/recording-logger.js';

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

const w = (port: number): string => `http://10.0.0.1:${port}`;
const signal = new AbortController().signal;

/** The engine pool with cells at `ports`; `capacity` set makes it judged against a threshold. */
function state(ports: number[], capacity?: PoolRouting['capacity']): RoutingState {
  const pool: PoolRouting = {
    namespace: 'inference',
    pool: 'engine',
    cells: ports.map((port, i) => ({
      cell: `engine-${i}`,
      generation: 'g1',
      address: `10.0.0.1:${port}`,
    })),
  };
  if (capacity) pool.capacity = capacity;
  return { pools: [pool] };
}
const panic = { routable: 1, known: 4, thresholdPercent: 50, panic: true };

function sink(fake: FakeSglangRouter, extra: Partial<SglangRouterSinkOptions> = {}) {
  const events: SinkEvent[] = [];
  const logger = new RecordingLogger();
  const instance = new SglangRouterSink({
    targets: [{ pool: 'engine', url: fake.url }],
    wallClock: () => new Date('2026-01-02T03:04:05.000Z'),
    logger,
    publish: (event) => events.push(event),
    ...extra,
  });
  return { sink: instance, events, logger };
}

describe('SglangRouterSink ownership', () => {
  it('marks every worker it adds with the managed-by label', async () => {
    const fake = await router();
    const { sink: s } = sink(fake);
    await s.apply(state([8000]), signal);
    expect(fake.workers().map((x) => x.labels)).toEqual([
      { [WORKER_MARK_LABEL]: WORKER_MARK_VALUE },
    ]);
  });

  it('managed (the default) leaves a hand-added worker in place and removes its own', async () => {
    const fake = await router();
    const { sink: s, events } = sink(fake);
    fake.addByHand(w(9999));
    await s.apply(state([8000, 8001]), signal);
    fake.clearRequests();
    await s.apply(state([8000]), signal);
    const ownId = fake.workers().find((x) => x.url === w(8001))?.id;
    expect(fake.requests).toEqual(['GET /workers', `DELETE /workers/${ownId}`, 'GET /workers']);
    expect(events.at(-1)).toMatchObject({ removed: [w(8001)] });
    fake.finishDrains();
    expect(fake.listed()).toEqual([w(8000), w(9999)]);
    expect(s.status()[0]?.ownership).toEqual({ mode: 'managed', by: 'labels' });
  });

  it('managed leaves a worker another tool marked differently', async () => {
    const fake = await router({ version: '0.3.2' });
    const { sink: s } = sink(fake);
    fake.addByHand(w(9998), { labels: { [WORKER_MARK_LABEL]: 'helm' } });
    await s.apply(state([]), signal);
    expect(fake.listed()).toEqual([w(9998)]);
  });

  it('all removes the hand-added worker too', async () => {
    const fake = await router();
    const { sink: s } = sink(fake, { ownership: 'all' });
    const id = fake.addByHand(w(9999));
    await s.apply(state([8000]), signal);
    expect(fake.requests).toContain(`DELETE /workers/${id}`);
    expect(s.status()[0]?.ownership).toEqual({ mode: 'all', by: null });
  });

  it('on a router that lists no labels, removes only what this process recorded adding', async () => {
    const fake = await router({ keepsLabels: false });
    const { sink: s } = sink(fake);
    fake.addByHand(w(9999));
    await s.apply(state([8000]), signal);
    await s.apply(state([]), signal);
    fake.finishDrains();
    expect(fake.listed()).toEqual([w(9999)]);
    expect(s.status()[0]?.ownership).toEqual({ mode: 'managed', by: 'record' });

    // A new process (a restart, a failover) has no record: it removes nothing it finds.
    await s.apply(state([8001]), signal);
    const { sink: fresh } = sink(fake);
    await fresh.apply(state([]), signal);
    expect(fake.listed()).toEqual([w(8001), w(9999)]);
  });
});

describe('SglangRouterSink in panic', () => {
  it('removes nothing it lists while the pool is in panic, still adds, and removes once it is out', async () => {
    const fake = await router();
    const { sink: s, events } = sink(fake);
    await s.apply(state([8000, 8001, 8002]), signal);
    fake.clearRequests();

    await s.apply(state([8003], panic), signal);
    expect(fake.requests.filter((r) => r.startsWith('DELETE'))).toEqual([]);
    expect(fake.requests).toContain(`POST /workers ${w(8003)}`);
    expect(s.status()[0]).toMatchObject({
      panic: true,
      heldByPanic: [w(8000), w(8001), w(8002)],
    });
    expect(events.at(-1)).toMatchObject({ added: [w(8003)], removed: [] });

    await s.apply(state([8003], { ...panic, routable: 2, known: 4, panic: false }), signal);
    expect(fake.requests.filter((r) => r.startsWith('DELETE'))).toHaveLength(3);
    expect(s.status()[0]).toMatchObject({ panic: false, heldByPanic: [] });
  });
});

describe('SglangRouterSink in observe mode', () => {
  it('reads the router, reports what it would add and remove, and never writes', async () => {
    const fake = await router();
    fake.addByHand(w(9999), { labels: { [WORKER_MARK_LABEL]: WORKER_MARK_VALUE } }); // a marked leftover
    fake.addByHand(w(9000)); // by hand: managed would never remove it
    const { sink: s, events, logger } = sink(fake, { mode: 'observe' });

    await s.apply(state([8000]), signal);
    await s.apply(state([8000]), signal);
    expect(fake.requests).toEqual(['GET /workers', 'GET /workers']);
    expect(s.status()[0]).toMatchObject({
      mode: 'observe',
      wouldAdd: [w(8000)],
      wouldRemove: [w(9999)],
      actual: [w(9000), w(9999)],
      pending: [],
      lastError: null,
    });
    // Once per change: the second, equal diff is neither published nor logged again.
    expect(events).toEqual([
      {
        type: 'sink.observed',
        kind: 'sglang-router',
        target: fake.url,
        pool: 'engine',
        wouldAdd: [w(8000)],
        wouldRemove: [w(9999)],
      },
    ]);
    expect(logger.entries.filter((e) => /observe mode/.test(e.msg ?? ''))).toHaveLength(1);

    await s.apply(state([8000, 8001]), signal);
    expect(events.at(-1)).toMatchObject({ wouldAdd: [w(8000), w(8001)] });
    expect(fake.requests.every((r) => r === 'GET /workers')).toBe(true);
  });

  it('honours panic in what it says it would remove', async () => {
    const fake = await router();
    fake.addByHand(w(9999), { labels: { [WORKER_MARK_LABEL]: WORKER_MARK_VALUE } });
    const { sink: s } = sink(fake, { mode: 'observe' });
    await s.apply(state([], panic), signal);
    expect(s.status()[0]).toMatchObject({ wouldRemove: [], heldByPanic: [w(9999)], panic: true });
  });
});
