/**
 * Routers that cannot be believed (issue 36, findings 6 and 7) and smg's current contract
 * (issue 41, item 2): the SGLang router sink reports them and backs off per URL, never loops.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  canonicalWorkerUrl,
  SglangRouterSink,
  type SglangRouterSinkOptions,
  WORKER_MARK_LABEL,
  WORKER_MARK_VALUE,
} from '../../src/sinks/sglang-router.js';
import type { SinkEvent } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSglangRouter, type FakeSglangRouterOptions } from '../support/fake-sglang-router.js';
import { RecordingLogger } from '../support/recording-logger.js';

const routers: FakeSglangRouter[] = [];
afterEach(async () => {
  await Promise.all(routers.splice(0).map((r) => r.stop()));
});

async function router(options: FakeSglangRouterOptions = {}): Promise<FakeSglangRouter> {
  const fake = new FakeSglangRouter(options);
  await fake.start();
  routers.push(fake);
  return fake;
}

/** Pool `engine`'s cells at the given ports on 10.0.0.1. */
function state(ports: number[]): RoutingState {
  return {
    pools: [
      {
        namespace: 'inference',
        pool: 'engine',
        cells: ports.map((port, i) => ({
          cell: `engine-${i}`,
          generation: 'g1',
          address: `10.0.0.1:${port}`,
        })),
      },
    ],
  };
}

const w = (port: number): string => `http://10.0.0.1:${port}`;
const signal = (): AbortSignal => new AbortController().signal;
const mark = { [WORKER_MARK_LABEL]: WORKER_MARK_VALUE };

function sink(fake: FakeSglangRouter, extra: Partial<SglangRouterSinkOptions> = {}) {
  const events: SinkEvent[] = [];
  const logger = new RecordingLogger();
  const clock = new FakeClock();
  const instance = new SglangRouterSink({
    targets: [{ pool: 'engine', url: fake.url }],
    wallClock: () => new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + clock.now()),
    clock,
    logger,
    publish: (event) => events.push(event),
    ...extra,
  });
  return { sink: instance, events, logger, clock };
}

const posts = (fake: FakeSglangRouter): string[] =>
  fake.requests.filter((r) => r.startsWith('POST'));

describe('SglangRouterSink: a router that does not take an add', () => {
  it('backs off per URL on a 409 without a worker id for a URL it does not list, and says why', async () => {
    const fake = await router();
    fake.lie = 'conflict-without-id';
    const { sink: s, events, logger, clock } = sink(fake);

    await s.apply(state([8000]), signal());
    expect(posts(fake)).toEqual([`POST /workers ${w(8000)}`]);
    // Not reported as added: nothing was.
    expect(events).toEqual([]);
    const [status] = s.status();
    expect(status?.pending).toEqual([
      {
        operation: 'add',
        endpoint: w(8000),
        since: '2026-01-02T03:04:05.000Z',
        reason:
          'the router answered 409 (already registered) without a worker id, yet does not list it',
        retryAt: '2026-01-02T03:04:06.000Z',
      },
    ]);
    expect(status?.lastError).toBe(
      `the router did not take an add (see pending): ${w(8000)} (the router answered 409 (already registered) without a worker id, yet does not list it)`,
    );
    expect(s.nextAttemptAtMs()).toBe(1_000);
    expect(logger.mentioning(w(8000), 'warn')).toHaveLength(1);

    // Runs keep beginning: the URL is not posted again before its backoff ends.
    for (let i = 0; i < 5; i++) await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(1);
    expect(logger.mentioning(w(8000), 'warn')).toHaveLength(1);

    // Then once, and the next wait doubles.
    await clock.advance(1_000);
    await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(2);
    expect(s.nextAttemptAtMs()).toBe(3_000);
    await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(2);

    // The router mends its ways: the add is taken, listed, and the report clears.
    fake.lie = undefined;
    fake.autoComplete = true;
    await clock.advance(2_000);
    await s.apply(state([8000]), signal());
    await s.apply(state([8000]), signal());
    expect(fake.listed()).toEqual([w(8000)]);
    expect(s.status()[0]).toMatchObject({ pending: [], lastError: null, actual: [w(8000)] });
    expect(s.nextAttemptAtMs()).toBeUndefined();
  });

  it('refuses an add taken without a worker id that the router never lists', async () => {
    const fake = await router();
    fake.lie = 'accept-without-id';
    const { sink: s, clock } = sink(fake);
    await s.apply(state([8000]), signal());
    for (let i = 0; i < 5; i++) await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(1);
    expect(s.status()[0]?.pending).toMatchObject([
      {
        endpoint: w(8000),
        reason: 'the router took the add without a worker id to follow and does not list it',
        retryAt: '2026-01-02T03:04:06.000Z',
      },
    ]);
    await clock.advance(1_000);
    await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(2);
  });

  it('posts an honestly failed add again at once, and backs off when it fails again', async () => {
    const fake = await router();
    const { sink: s } = sink(fake);
    await s.apply(state([8000]), signal());
    fake.failAdds();
    await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(2);
    fake.failAdds();
    await s.apply(state([8000]), signal());
    await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(2);
    expect(s.status()[0]?.pending[0]?.reason).toMatch(/^the router failed the add of .* again/);
  });

  it('forgets a refusal once the URL is no longer desired', async () => {
    const fake = await router();
    fake.lie = 'conflict-without-id';
    const { sink: s } = sink(fake);
    await s.apply(state([8000]), signal());
    await s.apply(state([]), signal());
    expect(s.status()[0]).toMatchObject({ pending: [], lastError: null });
    expect(s.nextAttemptAtMs()).toBeUndefined();
    await s.apply(state([8000]), signal());
    expect(posts(fake)).toHaveLength(2);
  });
});

describe('SglangRouterSink: a worker listed without its mark', () => {
  it('reports a worker it added that the router lists without the mark, once per URL', async () => {
    const fake = await router({ autoComplete: true });
    fake.dropsLabels = true;
    const { sink: s, logger } = sink(fake);
    await s.apply(state([8000, 8001]), signal());
    await s.apply(state([8000, 8001]), signal());
    expect(fake.listed()).toEqual([w(8000), w(8001)]);
    expect(s.status()[0]?.unmarked).toEqual([]);

    // 8001's cell died: managed ownership may not remove an unmarked worker, so it is reported.
    await s.apply(state([8000]), signal());
    await s.apply(state([8000]), signal());
    expect(fake.listed()).toEqual([w(8000), w(8001)]);
    expect(s.status()[0]?.unmarked).toEqual([w(8001)]);
    expect(logger.mentioning('listed without its mark', 'warn')).toHaveLength(1);

    // A hand-added worker the sink never added is not its business.
    fake.addByHand(w(9000));
    await s.apply(state([8000]), signal());
    expect(s.status()[0]?.unmarked).toEqual([w(8001)]);
  });

  it('with ownership all removes it, so nothing is reported', async () => {
    const fake = await router({ autoComplete: true });
    fake.dropsLabels = true;
    const { sink: s } = sink(fake, { ownership: 'all' });
    await s.apply(state([8000, 8001]), signal());
    await s.apply(state([8000, 8001]), signal());
    await s.apply(state([8000]), signal());
    fake.finishDrains();
    expect(fake.listed()).toEqual([w(8000)]);
    expect(s.status()[0]?.unmarked).toEqual([]);
  });
});

describe("SglangRouterSink beside smg's own discovery", () => {
  for (const label of ['smg.ai/pod-name', 'smg.ai/pod-uid']) {
    for (const ownership of ['managed', 'all'] as const) {
      it(`never removes a worker carrying ${label} (${ownership}), and says so once`, async () => {
        const fake = await router();
        fake.addByHand(w(9000), { labels: { [label]: 'engine-7' } });
        fake.addByHand(w(9001), { labels: { [label]: 'engine-8', ...mark } });
        fake.addByHand(w(9002), { labels: mark });
        const { sink: s, logger } = sink(fake, { ownership });
        await s.apply(state([]), signal());
        await s.apply(state([]), signal());
        fake.finishDrains();
        expect(fake.listed()).toEqual([w(9000), w(9001)]);
        expect(logger.mentioning("smg's own Kubernetes discovery", 'warn')).toHaveLength(1);
      });
    }
  }
});

describe('SglangRouterSink worker URLs', () => {
  it('sends a lowercase, scheme-qualified URL and matches a listed one in any case', async () => {
    const fake = await router();
    fake.addByHand('HTTP://10.0.0.1:8000/', { labels: mark });
    const { sink: s } = sink(fake);
    await s.apply(
      {
        pools: [
          {
            namespace: 'inference',
            pool: 'engine',
            cells: [
              { cell: 'a', generation: 'g1', address: '10.0.0.1:8000' },
              { cell: 'b', generation: 'g1', address: '[FD00::AB]:8000' },
            ],
          },
        ],
      },
      signal(),
    );
    expect(fake.requests).toEqual([
      'GET /workers',
      'POST /workers http://[fd00::ab]:8000',
      'GET /workers',
    ]);
    expect(s.status()[0]).toMatchObject({
      desired: ['http://10.0.0.1:8000', 'http://[fd00::ab]:8000'],
      actual: ['http://10.0.0.1:8000'],
    });
  });

  it('canonicalWorkerUrl lowercases only the scheme and host and drops trailing slashes', () => {
    expect(canonicalWorkerUrl('HTTPS://Router.Example:30000/')).toBe(
      'https://router.example:30000',
    );
    expect(canonicalWorkerUrl('http://10.0.0.1:8000/Path')).toBe('http://10.0.0.1:8000/Path');
    expect(canonicalWorkerUrl('10.0.0.1:8000')).toBe('10.0.0.1:8000');
  });
});
