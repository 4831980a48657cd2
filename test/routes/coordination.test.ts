import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeLeaseStore } from '../support/fake-lease-lock.js';
import { FakeSink, targetStatus } from '../support/fake-sink.js';
import { lwsPod } from '../support/lws-pod.js';
import {
  closeAll,
  type Harness,
  harness,
  leaseLeadership,
  upsert,
  WALL_CLOCK_MS,
} from '../support/service-harness.js';
import { until } from '../support/until.js';

const streams: IncomingMessage[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.destroy();
  await closeAll();
});

/** A Lease someone else holds and renewed just now (from where this replica stands). */
function heldByOther(): FakeLeaseStore {
  const store = new FakeLeaseStore();
  store.put({
    holderIdentity: 'b_2',
    leaseDurationSeconds: 15,
    acquireTime: '2025-06-01T11:00:00.000000Z',
    renewTime: '2025-06-01T11:00:00.000000Z',
    leaseTransitions: 0,
  });
  return store;
}

const ROUTED = {
  pools: [
    {
      namespace: 'ns',
      pool: 'engine',
      cells: [{ cell: 'engine-00000', generation: expect.any(String), address: '10.0.0.1:30000' }],
    },
  ],
};

describe('GET /api/v1/leader', () => {
  it('shows this replica leading its Lease, since when', async () => {
    const { app, clock, start } = await harness({
      start: false,
      leadership: leaseLeadership(new FakeLeaseStore(), { lease: 'pools/pool-controller' }),
    });
    expect((await app.inject({ url: '/api/v1/leader' })).json()).toEqual({
      source: 'kubernetes',
      identity: 'a_1',
      leading: false,
      leader: null,
      lease: 'pools/pool-controller',
      since: null,
    });
    await clock.advance(3_000);
    await start([lwsPod()]);
    const res = await app.inject({ url: '/api/v1/leader' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      identity: 'a_1',
      leading: true,
      leader: 'a_1',
      lease: 'pools/pool-controller',
      since: '2025-06-01T12:00:03.000Z',
    });
  });

  it('on a follower names the leader and leaves since empty', async () => {
    const { app } = await harness({
      leadership: leaseLeadership(heldByOther(), { lease: 'pools/pool-controller' }),
    });
    expect((await app.inject({ url: '/api/v1/leader' })).json()).toEqual({
      source: 'kubernetes',
      identity: 'a_1',
      leading: false,
      leader: 'b_2',
      lease: 'pools/pool-controller',
      since: null,
    });
  });

  it('without a Lease shows this process leading alone', async () => {
    const { app } = await harness();
    const body = (await app.inject({ url: '/api/v1/leader' })).json();
    expect(body).toMatchObject({ leading: true, lease: null });
    expect(body.leader).toBe(body.identity);
    expect(body.identity).toMatch(/_[0-9a-f]{10}$/);
    expect(new Date(body.since).toISOString()).toBe(body.since);
  });
});

describe('GET /api/v1/coordinator', () => {
  it("on the leader shows the coordinator's last run and the desired state it deployed", async () => {
    const { app } = await harness({ pods: [lwsPod()], driftIntervalMs: null });
    const res = await app.inject({ url: '/api/v1/coordinator' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      leading: true,
      acting: true,
      cellsSynced: true,
      state: {
        running: false,
        runningId: null,
        pendingReasons: [],
        consecutiveFailures: 0,
        nextRetryAt: null,
        nextRetryInMs: null,
        lastCompleted: { id: 1, result: 'success', at: '2025-06-01T12:00:00.000Z', agoMs: 0 },
        lastError: null,
      },
      desired: ROUTED,
    });
  });

  it('shows a failed run: its phase and message, and when the retry is due', async () => {
    const sink = new FakeSink();
    sink.failNext(new Error('router unreachable'));
    const { app } = await harness({ pods: [lwsPod()], sinks: () => [sink] });
    const { state } = (await app.inject({ url: '/api/v1/coordinator' })).json();
    expect(state).toMatchObject({
      consecutiveFailures: 1,
      // The harness's wall clock stands still at WALL_CLOCK_MS while its fake clock is at 0.
      nextRetryAt: '2025-06-01T12:00:01.000Z',
      nextRetryInMs: 1_000,
      lastCompleted: { id: 1, result: 'failure', at: '2025-06-01T12:00:00.000Z', agoMs: 0 },
      lastError: { phase: 'deploy', message: 'deploy failed: router unreachable' },
    });
  });

  it('shows the run in flight', async () => {
    const sink = new FakeSink();
    const held = sink.hangNext();
    const { app } = await harness({ pods: [lwsPod()], sinks: () => [sink] });
    await held.called;
    const { state } = (await app.inject({ url: '/api/v1/coordinator' })).json();
    expect(state).toMatchObject({ running: true, runningId: 1, lastCompleted: null });
    held.release();
  });

  it('on a follower renders the desired state locally, the same as the leader would', async () => {
    const sink = new FakeSink();
    const { app } = await harness({
      pods: [lwsPod()],
      leadership: leaseLeadership(heldByOther(), { lease: 'pools/pool-controller' }),
      sinks: () => [sink],
    });
    const body = (await app.inject({ url: '/api/v1/coordinator' })).json();
    expect(body).toMatchObject({ leading: false, acting: false, cellsSynced: true });
    expect(body.state).toMatchObject({ running: false, lastCompleted: null });
    expect(body.desired).toEqual(ROUTED);
    expect(sink.calls).toHaveLength(0);
  });

  it('has no desired state before the cells have synced', async () => {
    const { app } = await harness({ start: false });
    const body = (await app.inject({ url: '/api/v1/coordinator' })).json();
    expect(body).toMatchObject({ cellsSynced: false, acting: false, desired: null });
  });
});

describe('GET /api/v1/sinks', () => {
  it('lists every target of every sink', async () => {
    const sink = new FakeSink();
    sink.statuses = [
      targetStatus({
        desired: ['http://10.0.0.1:30000'],
        actual: ['http://10.0.0.1:30000'],
        lastAppliedAt: '2025-06-01T12:00:00.000Z',
      }),
    ];
    const { app } = await harness({ pods: [lwsPod()], sinks: () => [sink] });
    const res = await app.inject({ url: '/api/v1/sinks' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      mode: 'apply',
      panicThresholdPercent: 0,
      panic: [],
      sinks: sink.statuses,
    });
  });

  it('is empty with no sink configured', async () => {
    const { app } = await harness();
    expect((await app.inject({ url: '/api/v1/sinks' })).json()).toEqual({
      source: 'kubernetes',
      mode: 'apply',
      panicThresholdPercent: 0,
      panic: [],
      sinks: [],
    });
  });
});

/** An SSE client on a real socket: collects the text it receives. */
async function connect(h: Harness, path = '/api/v1/events', headers: Record<string, string> = {}) {
  const address = h.app.server.address() as AddressInfo | null;
  if (!address) await h.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = h.app.server.address() as AddressInfo;
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, headers }, resolve).on('error', reject).end();
  });
  streams.push(response);
  let text = '';
  let ended = false;
  const waiters: Array<() => void> = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    text += chunk;
    wake();
  });
  response.on('end', () => {
    ended = true;
    wake();
  });
  response.on('close', () => {
    ended = true;
    wake();
  });
  const client = {
    response,
    get text() {
      return text;
    },
    get ended() {
      return ended;
    },
    /** Resolves once the received text satisfies `check` (or the stream ends). */
    async until(check: (text: string) => boolean): Promise<string> {
      while (!check(text) && !ended) {
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
      return text;
    },
  };
  await client.until((t) => t.includes('\n\n'));
  return client;
}

describe('GET /api/v1/events', () => {
  it('refuses an unknown type in ?types= with 400, naming it', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/api/v1/events?types=cell.changed,cell.exploded' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ status: 400, error: 'Bad Request' });
    expect(res.json().message).toContain('unknown event type "cell.exploded"');
  });

  it('streams text/event-stream: the retry field, then id, event and data for every event', async () => {
    const h = await harness({ pods: [lwsPod()], driftIntervalMs: null });
    const client = await connect(h);
    expect(client.response.statusCode).toBe(200);
    expect(client.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(client.response.headers['cache-control']).toBe('no-cache, no-transform');
    expect(client.text).toBe('retry: 2000\n: connected; heartbeat every 15s\n\n');

    await h.push(upsert(lwsPod({ ready: false })));
    const text = await client.until((t) => t.includes('event: reconciliation.completed'));
    const messages = text.split('\n\n').filter((m) => m.startsWith('id: '));
    expect(messages.map((m) => m.split('\n')[1])).toEqual([
      'event: cell.changed',
      'event: reconciliation.triggered',
      'event: reconciliation.started',
      'event: phase.completed',
      'event: phase.completed',
      'event: phase.completed',
      'event: reconciliation.completed',
    ]);
    // Ids are `<epoch>-<sequence>`, one epoch per process, the sequence counting every event.
    const ids = messages.map((m) => /^id: ([0-9a-f]{8})-(\d+)$/.exec(m.split('\n')[0]!)!);
    expect(new Set(ids.map((id) => id[1])).size).toBe(1);
    const first = Number(ids[0]![2]);
    expect(ids.map((id) => Number(id[2]))).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => first + i));
    const changed = JSON.parse(messages[0]!.split('\n')[2]!.slice('data: '.length));
    expect(changed).toMatchObject({
      type: 'cell.changed',
      cell: 'engine-00000',
      pool: 'engine',
      alive: false,
      address: '10.0.0.1:30000',
      time: new Date(WALL_CLOCK_MS).toISOString(),
    });
  });

  it('resumes after the Last-Event-ID header: a reconnecting client receives what it missed', async () => {
    const h = await harness({ pods: [lwsPod()], driftIntervalMs: null });
    const first = await connect(h, '/api/v1/events?types=cell.changed');
    await h.push(upsert(lwsPod({ ready: false })));
    const seen = await first.until((t) => t.includes('event: cell.changed'));
    const lastId = /^id: (.*)$/m.exec(seen)![1]!;
    first.response.destroy();
    await until(() => h.service.eventStreams.count === 0, { what: 'every stream closed' });
    await h.push(upsert(lwsPod({ ready: true })));
    const again = await connect(h, '/api/v1/events?types=cell.changed', {
      'last-event-id': lastId,
    });
    const text = await again.until((t) => t.includes('"alive":true'));
    expect(text.match(/^event: .*$/gm)).toEqual(['event: cell.changed']);
    expect(text).not.toContain(`id: ${lastId}\n`);
  });

  it('takes ?lastEventId= for a first connection (EventSource cannot set the header); the header wins', async () => {
    const h = await harness({ pods: [lwsPod()], driftIntervalMs: null });
    const epoch = h.service.eventStreams.history.epoch;
    const latest = h.service.eventStreams.history.latest;
    const query = await connect(h, `/api/v1/events?types=store.synced&lastEventId=${epoch}-0`);
    expect(await query.until((t) => t.includes('event: store.synced'))).toContain('"objects":1');
    const both = await connect(h, `/api/v1/events?types=store.synced&lastEventId=${epoch}-0`, {
      'last-event-id': `${epoch}-${latest}`,
    });
    h.service.bus.publish({ type: 'store.synced', objects: 7, cells: 7 });
    const text = await both.until((t) => t.includes('"objects":7'));
    expect(text).not.toContain('"objects":1');
  });

  it('refuses a ?lastEventId= that is not an id with 400, naming the parameter', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/api/v1/events?lastEventId=12' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toBe(
      "query parameter lastEventId: lastEventId must be an event id as the stream writes them (8 hex digits, '-', a number)",
    );
  });

  it('answers a Last-Event-ID it could not have sent with events.missed (missed: null), not a 400', async () => {
    const h = await harness({ driftIntervalMs: null });
    for (const lastEventId of ['x'.repeat(100), '0', 'deadbeef-1']) {
      const client = await connect(h, '/api/v1/events?types=leader.changed', {
        'last-event-id': lastEventId,
      });
      expect(client.response.statusCode).toBe(200);
      const text = await client.until((t) => t.includes('event: events.missed'));
      expect(text).toContain('"missed":null');
      // The value is never quoted back.
      if (lastEventId.length > 1) expect(text).not.toContain(lastEventId);
      client.response.destroy();
      await until(() => h.service.eventStreams.count === 0, { what: 'every stream closed' });
    }
  });

  it('sends only the types asked for', async () => {
    const h = await harness({ pods: [lwsPod()], driftIntervalMs: null });
    const client = await connect(h, '/api/v1/events?types=reconciliation.started,cell.changed');
    await h.push(upsert(lwsPod({ ready: false })));
    const text = await client.until((t) => t.includes('event: reconciliation.started'));
    expect(text.match(/^event: .*$/gm)).toEqual([
      'event: cell.changed',
      'event: reconciliation.started',
    ]);
  });

  it('sends a heartbeat comment every 15 s by the fake clock', async () => {
    const h = await harness({ driftIntervalMs: null });
    const client = await connect(h);
    await h.clock.advance(14_999);
    expect(h.clock.pendingTimers).toBeGreaterThan(0); // the heartbeat is still due, not sent
    expect(client.text).not.toContain(': heartbeat');
    await h.clock.advance(1);
    await client.until((t) => t.includes(': heartbeat\n\n'));
    await h.clock.advance(15_000);
    const text = await client.until((t) => t.split(': heartbeat').length === 3);
    expect(text.split(': heartbeat')).toHaveLength(3);
  });

  it('tells a client that fell behind how many events it lost, and counts them in the metric', async () => {
    const h = await harness({ driftIntervalMs: null });
    const client = await connect(h, '/api/v1/events?types=leader.changed');
    // 20 MiB published in one go, faster than any client can read and more than the socket
    // buffers hold: the stream keeps its newest 1 MiB.
    const padding = 'x'.repeat(10_000);
    for (let i = 0; i < 2_100; i += 1) {
      h.service.bus.publish({ type: 'leader.changed', identity: `r${i}-${padding}` });
    }
    const text = await client.until((t) => t.includes('"identity":"r2099-'));
    const notice = /event: events\.dropped\ndata: (.*)\n/.exec(text);
    expect(notice).not.toBeNull();
    const { dropped, totalDropped } = JSON.parse(notice![1]!);
    expect(dropped).toBeGreaterThan(1_000);
    expect(totalDropped).toBe(dropped);
    const kept = text.match(/^event: leader\.changed$/gm)!.length;
    expect(kept + dropped).toBe(2_100);
    const metrics = await h.app.inject({ url: '/metrics' });
    expect(metrics.body).toContain(
      `pool_controller_events_dropped_total{subscriber="sse"} ${dropped}`,
    );
  });

  it('answers 503 with Retry-After beyond --max-event-streams, and serves probes meanwhile', async () => {
    const h = await harness({ driftIntervalMs: null, maxEventStreams: 2 });
    const a = await connect(h);
    await connect(h);
    const refused = await h.app.inject({ url: '/api/v1/events' });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.json().message).toBe(
      '2 event streams are open, the most this server keeps (--max-event-streams); retry later',
    );
    expect((await h.app.inject({ url: '/healthz' })).statusCode).toBe(200);
    a.response.destroy();
    await until(() => h.service.eventStreams.count <= 1, { what: 'all but one stream closed' });
    const again = await connect(h);
    await again.until((t) => t.includes(': connected'));
  });

  it('gives each client its own stream, and drops it when the client goes away', async () => {
    const h = await harness({ driftIntervalMs: null });
    const a = await connect(h);
    const b = await connect(h);
    expect(h.service.eventStreams.count).toBe(2);
    a.response.destroy();
    await until(() => h.service.eventStreams.count <= 1, { what: 'all but one stream closed' });
    h.service.bus.publish({ type: 'leader.changed', identity: 'x' });
    await b.until((t) => t.includes('event: leader.changed'));
    expect(h.service.eventStreams.count).toBe(1);
  });

  it('ends open streams on closeEventStreams, so the server closes without waiting on them', async () => {
    const h = await harness({ driftIntervalMs: null });
    const client = await connect(h);
    h.service.beginShutdown();
    h.service.closeEventStreams();
    await client.until(() => false); // returns once the stream has ended
    expect(client.ended).toBe(true);
    await h.app.close();
    expect(h.service.eventStreams.count).toBe(0);
  });
});
