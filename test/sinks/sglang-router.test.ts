import { afterEach, describe, expect, it } from 'vitest';
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  SglangRouterSink,
  type SglangRouterSinkOptions,
  type SinkOperationRecord,
} from '../../src/sinks/sglang-router.js';
import { SinkApplyError, type SinkEvent } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSglangRouter, type FakeSglangRouterOptions } from '../support/fake-sglang-router.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { until } from '../support/until.js';

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

/** A routing state with the given pools' cells at the given ports on 10.0.0.1. */
function state(
  pools: Record<string, number[]>,
  namespace = 'inference',
  generation = 'g1',
): RoutingState {
  return {
    pools: Object.entries(pools).map(([pool, ports]) => ({
      namespace,
      pool,
      cells: ports.map((port, i) => ({
        cell: `${pool}-${i}`,
        generation,
        address: `10.0.0.1:${port}`,
      })),
    })),
  };
}

const w = (port: number): string => `http://10.0.0.1:${port}`;

function sink(
  targets: Array<[string, FakeSglangRouter | string]>,
  extra: Partial<SglangRouterSinkOptions> = {},
) {
  const events: SinkEvent[] = [];
  const operations: SinkOperationRecord[] = [];
  const logger = new RecordingLogger();
  const instance = new SglangRouterSink({
    targets: targets.map(([pool, r]) => ({ pool, url: typeof r === 'string' ? r : r.url })),
    wallClock: () => new Date('2026-01-02T03:04:05.000Z'),
    logger,
    publish: (event) => events.push(event),
    onOperation: (record) => operations.push(record),
    ...extra,
  });
  return { sink: instance, events, operations, logger };
}

const signal = (): AbortSignal => new AbortController().signal;

describe('SglangRouterSink', () => {
  it('adds the desired workers, remembers them pending until listed, then does nothing', async () => {
    const fake = await router({ apiKey: 'the-key' });
    const { sink: s, events, operations } = sink([['engine', fake]], { apiKey: 'the-key' });

    await s.apply(state({ engine: [8001, 8000] }), signal());
    // Listed again after the changes: `actual` is the router's list after the apply.
    expect(fake.requests).toEqual([
      'GET /workers',
      `POST /workers ${w(8000)}`,
      `POST /workers ${w(8001)}`,
      'GET /workers',
    ]);
    expect(fake.authorizations.every((a) => a === 'Bearer the-key')).toBe(true);
    expect(events).toEqual([
      {
        type: 'sink.applied',
        kind: 'sglang-router',
        target: fake.url,
        pool: 'engine',
        added: [w(8000), w(8001)],
        removed: [],
      },
    ]);
    const [status] = s.status();
    expect(status).toMatchObject({
      kind: 'sglang-router',
      target: fake.url,
      pool: 'engine',
      desired: [w(8000), w(8001)],
      actual: [],
      lastAppliedAt: '2026-01-02T03:04:05.000Z',
      lastError: null,
    });
    expect(status?.pending).toEqual([
      { operation: 'add', endpoint: w(8000), since: '2026-01-02T03:04:05.000Z' },
      { operation: 'add', endpoint: w(8001), since: '2026-01-02T03:04:05.000Z' },
    ]);

    // Still pending: checked by id, not posted again.
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.requests.filter((r) => r.startsWith('POST'))).toEqual([]);
    expect(fake.requests.filter((r) => r.startsWith('GET /workers/'))).toHaveLength(2);

    fake.completeAdds();
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.requests).toEqual(['GET /workers']);
    expect(fake.listed()).toEqual([w(8000), w(8001)]);
    expect(s.status()[0]).toMatchObject({ actual: [w(8000), w(8001)], pending: [] });
    expect(events).toHaveLength(1);
    expect(operations.filter((o) => o.operation === 'add')).toHaveLength(2);
    expect(operations.every((o) => o.result === 'success' && o.sink === 'sglang-router')).toBe(
      true,
    );
  });

  it('with ownership all removes every worker that is not desired, whoever added it, but never one for being unhealthy', async () => {
    const fake = await router({ autoComplete: true });
    const { sink: s, events } = sink([['engine', fake]], { ownership: 'all' });
    fake.addByHand(w(9999));
    fake.addByHand(w(8000));
    fake.setHealthy(w(8000), false);

    await s.apply(state({ engine: [8000] }), signal());
    const removedId = fake.workers().find((x) => x.url === w(9999))?.id;
    expect(fake.requests).toEqual(['GET /workers', `DELETE /workers/${removedId}`, 'GET /workers']);
    expect(events.at(-1)).toMatchObject({ added: [], removed: [w(9999)] });
    expect(s.status()[0]?.pending).toEqual([
      { operation: 'remove', endpoint: w(9999), since: '2026-01-02T03:04:05.000Z' },
    ]);

    // Draining (1.13): not removed again, not re-added while listed.
    fake.clearRequests();
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.requests).toEqual(['GET /workers']);
    fake.finishDrains();
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.listed()).toEqual([w(8000)]);
    expect(s.status()[0]?.pending).toEqual([]);
  });

  it('removes an alive cell’s worker the router gave up on (failed), and adds it again once it has left the list', async () => {
    const fake = await router({ version: '1.13', autoComplete: true });
    const { sink: s, logger } = sink([['engine', fake]]);
    await s.apply(state({ engine: [8000, 8001] }), signal());
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.listed()).toEqual([w(8000), w(8001)]);

    fake.giveUp(w(8000));
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    const id = fake.workers().find((x) => x.url === w(8000))?.id;
    expect(fake.requests).toEqual(['GET /workers', `DELETE /workers/${id}`, 'GET /workers']);
    expect(
      logger.mentioning('the router gave up on the workers of these alive cells', 'warn'),
    ).toHaveLength(1);
    // Draining: neither removed nor added again while listed.
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.requests).toEqual(['GET /workers']);
    fake.finishDrains();
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.requests).toEqual(['GET /workers', `POST /workers ${w(8000)}`, 'GET /workers']);
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.workers().map((x) => [x.url, x.state, x.gaveUp ?? false])).toEqual([
      [w(8001), 'ready', false],
      [w(8000), 'ready', false],
    ]);
  });

  it('leaves a worker the router gave up on when this sink does not own it', async () => {
    const fake = await router({ version: '1.13', autoComplete: true });
    const { sink: s } = sink([['engine', fake]]);
    // Hand-added, so unmarked: `managed` ownership never touches it.
    fake.addByHand(w(8000));
    fake.giveUp(w(8000));
    fake.clearRequests();
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.requests).toEqual(['GET /workers']);
  });

  it('re-adds a removed URL only after it has left the list (no drain race)', async () => {
    const fake = await router({ version: '1.13', autoComplete: true });
    const { sink: s } = sink([['engine', fake]]);
    await s.apply(state({ engine: [8000] }), signal());
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.listed()).toEqual([w(8000)]);

    await s.apply(state({ engine: [] }), signal()); // now draining
    fake.clearRequests();
    await s.apply(state({ engine: [8000] }), signal()); // back, but still listed as draining
    expect(fake.requests).toEqual(['GET /workers']);
    fake.finishDrains();
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.requests).toEqual([
      'GET /workers',
      'GET /workers',
      `POST /workers ${w(8000)}`,
      'GET /workers',
    ]);
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.listed()).toEqual([w(8000)]);
  });

  it('treats 409 (1.13) and a repeated 202 (0.3.2) as success and never re-posts a pending add', async () => {
    for (const version of ['1.13', '0.3.2'] as const) {
      const fake = await router({ version });
      // Someone else's add of the same URL is pending.
      const other = await fetch(`${fake.url}/workers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: w(8000) }),
      });
      expect(other.status).toBe(202);
      const { sink: s, events } = sink([['engine', fake]]);
      await s.apply(state({ engine: [8000] }), signal());
      await s.apply(state({ engine: [8000] }), signal());
      await s.apply(state({ engine: [8000] }), signal());
      expect(fake.requests.filter((r) => r.startsWith('POST'))).toHaveLength(2);
      expect(events).toHaveLength(1);
      expect(s.status()[0]?.pending).toMatchObject([{ operation: 'add', endpoint: w(8000) }]);
      expect(fake.extraJobs).toBe(version === '0.3.2' ? 1 : 0);
    }
  });

  it('forgets a pending add the router no longer knows or gave up on, and sends it again', async () => {
    const fake = await router();
    const { sink: s } = sink([['engine', fake]]);
    await s.apply(state({ engine: [8000, 8001] }), signal());
    fake.failAdds();
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.requests.filter((r) => r.startsWith('POST'))).toEqual([
      `POST /workers ${w(8000)}`,
      `POST /workers ${w(8001)}`,
    ]);

    // Restart: every worker and pending add forgotten; the next apply repopulates.
    fake.completeAdds();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.listed()).toEqual([w(8000), w(8001)]);
    fake.restart();
    fake.clearRequests();
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(fake.requests).toEqual([
      'GET /workers',
      `POST /workers ${w(8000)}`,
      `POST /workers ${w(8001)}`,
      'GET /workers',
    ]);
    fake.completeAdds();
    expect(fake.listed()).toEqual([w(8000), w(8001)]);
  });

  it('removes again a worker whose DELETE was lost while its add was pending', async () => {
    const fake = await router({ version: '0.3.2' });
    fake.addByHand(w(1)); // gives the pending add below company
    const { sink: s } = sink([['engine', fake]], { ownership: 'all' });
    // An add someone else sent, still pending: removing it now would be lost; the sink cannot
    // even see it, so it does nothing until it is listed.
    await fetch(`${fake.url}/workers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: w(8000) }),
    });
    await s.apply(state({ engine: [1] }), signal());
    fake.completeAdds();
    await s.apply(state({ engine: [1] }), signal());
    expect(fake.listed()).toEqual([w(1)]);

    // Our own add, then the cell goes away while it is pending: the DELETE is lost, the worker
    // registers, and the next apply removes it.
    await s.apply(state({ engine: [1, 8001] }), signal());
    const pendingId = fake.workers().find((x) => x.url === w(8001))?.id as string;
    await fetch(`${fake.url}/workers/${pendingId}`, { method: 'DELETE' }); // lost
    expect(fake.lostDeletes).toEqual([w(8001)]);
    fake.completeAdds();
    await s.apply(state({ engine: [1] }), signal());
    expect(fake.listed()).toEqual([w(1)]);
    // 0.3.2 removes at once: the list read after the apply already settles the removal.
    expect(s.status()[0]).toMatchObject({ actual: [w(1)], pending: [] });
    fake.clearRequests();
    await s.apply(state({ engine: [1] }), signal());
    expect(fake.requests).toEqual(['GET /workers']);
  });

  it('keeps a cell whose generation changed but whose address did not', async () => {
    const fake = await router({ autoComplete: true });
    const { sink: s, events } = sink([['engine', fake]]);
    await s.apply(state({ engine: [8000] }, 'inference', 'g1'), signal());
    await s.apply(state({ engine: [8000] }, 'inference', 'g1'), signal());
    fake.clearRequests();
    await s.apply(state({ engine: [8000] }, 'inference', 'g2'), signal());
    expect(fake.requests).toEqual(['GET /workers']);
    expect(events).toHaveLength(1);
  });

  it('routes each router its own pool, matched by name in every namespace', async () => {
    const a = await router({ autoComplete: true });
    const b = await router({ autoComplete: true });
    const { sink: s, logger } = sink([
      ['alpha', a],
      ['beta', b],
    ]);
    const desired: RoutingState = {
      pools: [
        ...state({ alpha: [8000] }, 'ns1').pools,
        ...state({ alpha: [8001], beta: [9000] }, 'ns2').pools,
      ],
    };
    await s.apply(desired, signal());
    await s.apply(desired, signal());
    expect(a.listed()).toEqual([w(8000), w(8001)]);
    expect(b.listed()).toEqual([w(9000)]);
    expect(logger.mentioning('several namespaces', 'warn')).not.toHaveLength(0);

    // A pool with no cells (absent from the state) empties its router.
    await s.apply(state({ alpha: [8000] }, 'ns1'), signal());
    b.finishDrains();
    expect(b.listed()).toEqual([]);
  });

  it('tries every router, then throws SinkApplyError naming only the failed ones', async () => {
    const up = await router({ autoComplete: true });
    const down = await router();
    const downUrl = down.url;
    await down.stop();
    const clock = new FakeClock();
    const {
      sink: s,
      events,
      operations,
    } = sink(
      [
        ['engine', up],
        ['other', downUrl],
      ],
      { clock },
    );
    const error = await s.apply(state({ engine: [8000], other: [8001] }), signal()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SinkApplyError);
    const failures = (error as SinkApplyError).failures;
    expect(failures.map((f) => f.target)).toEqual([downUrl]);
    expect(failures[0]?.error).toMatch(/GET \/workers: .*ECONNREFUSED/);
    expect(events.filter((e) => e.type === 'sink.failed')).toHaveLength(1);
    expect(operations).toContainEqual({
      sink: 'sglang-router',
      target: downUrl,
      operation: 'list',
      result: 'error',
    });
    await s.apply(state({ engine: [8000], other: [8001] }), signal()).catch(() => {});
    expect(up.listed()).toEqual([w(8000)]);
    const statuses = s.status();
    expect(statuses.find((x) => x.target === downUrl)).toMatchObject({
      lastAppliedAt: null,
      lastError: expect.stringContaining('ECONNREFUSED'),
    });
    expect(statuses.find((x) => x.target === up.url)?.lastError).toBeNull();

    // Back up: converges once its backoff ended, error cleared.
    await down.start();
    down.autoComplete = true;
    await clock.advance(1_000);
    await s.apply(state({ engine: [8000], other: [8001] }), signal());
    await s.apply(state({ engine: [8000], other: [8001] }), signal());
    expect(down.listed()).toEqual([w(8001)]);
    expect(s.status().every((x) => x.lastError === null)).toBe(true);
  });

  it('holds a router whose last call failed until its own backoff ends, while another deploys at once', async () => {
    const up = await router({ autoComplete: true });
    const flaky = await router({ autoComplete: true });
    flaky.failWith = 500;
    flaky.failOnly = 'GET /workers';
    const clock = new FakeClock();
    const { sink: s, events } = sink(
      [
        ['engine', up],
        ['other', flaky],
      ],
      { clock, backoffMaxMs: 2_000 },
    );
    await expect(s.apply(state({ engine: [8000], other: [9000] }), signal())).rejects.toThrow(
      SinkApplyError,
    );
    expect(flaky.requests).toEqual(['GET /workers']);
    expect(s.nextAttemptAtMs()).toBe(1_000);
    expect(s.status().find((t) => t.target === flaky.url)?.backoffUntil).toBe(
      '2026-01-02T03:04:06.000Z',
    );

    // Runs keep beginning (cell changes): the held router is not called, the other deploys.
    for (const ports of [
      [8000, 8001],
      [8000, 8001, 8002],
    ]) {
      const error = await s.apply(state({ engine: ports, other: [9000] }), signal()).then(
        () => undefined,
        (e: unknown) => e as SinkApplyError,
      );
      expect(error?.failures.map((f) => [f.target, f.error.split(':')[0]])).toEqual([
        [flaky.url, 'not called until 2026-01-02T03'],
      ]);
    }
    expect(flaky.requests).toEqual(['GET /workers']);
    expect(up.listed()).toEqual([w(8000), w(8001), w(8002)]);
    // Held runs publish nothing new: the failure was reported once.
    expect(events.filter((e) => e.type === 'sink.failed')).toHaveLength(1);

    // Its backoff ends: called once, fails again, held twice as long (capped at 2 s).
    await clock.advance(1_000);
    await s.apply(state({ engine: [8000], other: [9000] }), signal()).catch(() => {});
    expect(flaky.requests).toEqual(['GET /workers', 'GET /workers']);
    expect(s.nextAttemptAtMs()).toBe(3_000);

    flaky.failWith = undefined;
    await clock.advance(2_000);
    await s.apply(state({ engine: [8000], other: [9000] }), signal());
    expect(flaky.listed()).toEqual([w(9000)]);
    expect(s.nextAttemptAtMs()).toBeUndefined();
    expect(s.status().every((t) => t.backoffUntil === null && t.lastError === null)).toBe(true);
  });

  it("shows as actual the router's list after the apply, not the one read before it", async () => {
    const fake = await router({ autoComplete: true });
    const { sink: s } = sink([['engine', fake]]);
    await s.apply(state({ engine: [8000, 8001] }), signal());
    expect(s.status()[0]).toMatchObject({ actual: [w(8000), w(8001)], pending: [] });
  });

  it('an HTTP error names the call and never the API key', async () => {
    const fake = await router({ apiKey: 'sekret-key' });
    fake.failWith = 500;
    fake.failOnly = 'POST';
    const { sink: s, logger, events } = sink([['engine', fake]], { apiKey: 'sekret-key' });
    const error = (await s
      .apply(state({ engine: [8000] }), signal())
      .catch((e: unknown) => e)) as SinkApplyError;
    expect(error.message).toContain('POST /workers: HTTP 500: injected failure');
    expect(
      JSON.stringify({ m: error.message, logs: logger.entries, events, status: s.status() }),
    ).not.toContain('sekret-key');

    // A wrong key: 401, named.
    const { sink: wrong } = sink([['engine', fake]], { apiKey: 'other' });
    fake.failWith = undefined;
    await expect(wrong.apply(state({ engine: [8000] }), signal())).rejects.toThrow(/HTTP 401/);
  });

  it('bounds each call with a timeout on the injected clock', async () => {
    const fake = await router();
    fake.holdAnswers = true;
    const clock = new FakeClock();
    const { sink: s } = sink([['engine', fake]], { clock, requestTimeoutMs: 1_000 });
    const result = s.apply(state({ engine: [8000] }), signal()).catch((e: unknown) => e);
    await until(() => fake.held === 1, { what: 'the request to reach the router' });
    await clock.advance(999);
    expect(clock.pendingTimers).toBe(1); // still waiting, 1 ms before the timeout
    await clock.advance(1);
    const error = (await result) as SinkApplyError;
    expect(error).toBeInstanceOf(SinkApplyError);
    expect(error.message).toContain('GET /workers: no answer within 1000 ms');
    expect(clock.pendingTimers).toBe(0);
  });

  it('after abort sends nothing more and rejects with the abort reason', async () => {
    const fake = await router();
    fake.holdAnswers = true;
    const { sink: s, events } = sink([['engine', fake]]);
    const controller = new AbortController();
    const result = s
      .apply(state({ engine: [8000, 8001] }), controller.signal)
      .catch((e: unknown) => e);
    await until(() => fake.held === 1, { what: 'the GET to reach the router' });
    const reason = new Error('lost the lease');
    controller.abort(reason);
    expect(await result).toBe(reason);
    // The router answers after all; the aborted apply must not act on it or go on.
    fake.holdAnswers = false;
    fake.releaseHeld();
    await until(() => fake.held === 0, { what: 'the router to answer the held GET' });
    await expect(s.apply(state({ engine: [8000] }), controller.signal)).rejects.toBe(reason);
    expect(events).toEqual([]);
    // A later apply's requests come right after the aborted one's GET: nothing in between.
    await s.apply(state({ engine: [8000] }), signal());
    expect(fake.requests.slice(0, 2)).toEqual(['GET /workers', 'GET /workers']);
    expect(fake.requests.filter((r) => r.includes(':8001'))).toEqual([]);
  });

  it('refuses one router for two pools and parses POOL=URL', () => {
    expect(
      () =>
        new SglangRouterSink({
          targets: [
            { pool: 'a', url: 'http://r:1' },
            { pool: 'b', url: 'http://r:1/' },
          ],
        }),
    ).toThrow(/serves one pool/);
  });
});
