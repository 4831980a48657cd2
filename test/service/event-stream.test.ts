import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/coordination/event-bus.js';
import {
  formatSseEvent,
  SSE_HEARTBEAT_MS,
  SSE_RETRY_MS,
  sseStream,
} from '../../src/service/event-stream.js';
import { SERVICE_EVENT_TYPES, type ServiceEvent } from '../../src/service/service-events.js';
import { FakeClock, settle } from '../support/fake-clock.js';

const HELLO = `retry: ${SSE_RETRY_MS}\n: connected; heartbeat every 15s\n\n`;

function leader(identity: string): ServiceEvent {
  return { type: 'leader.changed', identity };
}

function setup(options: { types?: string[]; bufferSize?: number; heartbeatMs?: number } = {}) {
  const bus = new EventBus<ServiceEvent>();
  const clock = new FakeClock();
  const abort = new AbortController();
  const dropped: number[] = [];
  const stream = sseStream({
    bus,
    clock,
    signal: abort.signal,
    ...options,
    onDropped: (count) => dropped.push(count),
  });
  /** Chunks received so far, pulled by a reader that runs like an HTTP response would. */
  const chunks: string[] = [];
  let ended = false;
  const reading = (async () => {
    for await (const chunk of stream) chunks.push(chunk);
    ended = true;
  })();
  return {
    bus,
    clock,
    abort,
    dropped,
    chunks,
    reading,
    get ended() {
      return ended;
    },
  };
}

describe('formatSseEvent', () => {
  it('writes id, event and one data line of JSON, ended by a blank line', () => {
    expect(formatSseEvent(7, 'leader.changed', { type: 'leader.changed', identity: 'a' })).toBe(
      'id: 7\nevent: leader.changed\ndata: {"type":"leader.changed","identity":"a"}\n\n',
    );
  });

  it('keeps a multi-line value on one data line', () => {
    expect(formatSseEvent(1, 'x', { text: 'a\nb' })).toBe(
      'id: 1\nevent: x\ndata: {"text":"a\\nb"}\n\n',
    );
  });
});

describe('sseStream', () => {
  it('opens with the retry field and a comment, then sends every event in publish order with increasing ids', async () => {
    const s = setup();
    await settle();
    expect(s.chunks).toEqual([HELLO]);
    s.bus.publish(leader('a'));
    s.bus.publish({ type: 'store.synced', objects: 2, cells: 1 });
    await settle();
    expect(s.chunks.slice(1)).toEqual([
      formatSseEvent(1, 'leader.changed', leader('a')),
      formatSseEvent(2, 'store.synced', { type: 'store.synced', objects: 2, cells: 1 }),
    ]);
    s.abort.abort();
    await s.reading;
  });

  it('sends only the asked-for types', async () => {
    const s = setup({ types: ['store.synced'] });
    await settle();
    s.bus.publish(leader('a'));
    s.bus.publish({ type: 'store.synced', objects: 0, cells: 0 });
    s.bus.publish(leader('b'));
    await settle();
    expect(s.chunks.slice(1)).toEqual([
      formatSseEvent(1, 'store.synced', { type: 'store.synced', objects: 0, cells: 0 }),
    ]);
    s.abort.abort();
    await s.reading;
  });

  it('does not replay events published before the client connected', async () => {
    const bus = new EventBus<ServiceEvent>();
    bus.publish(leader('early'));
    const abort = new AbortController();
    const stream = sseStream({ bus, clock: new FakeClock(), signal: abort.signal });
    expect((await stream.next()).value).toBe(HELLO);
    const next = stream.next();
    bus.publish(leader('late'));
    expect((await next).value).toBe(formatSseEvent(1, 'leader.changed', leader('late')));
    abort.abort();
    expect((await stream.next()).done).toBe(true);
  });

  it('sends a heartbeat comment every 15 s while idle, by the injected clock', async () => {
    const s = setup();
    await settle();
    await s.clock.advance(SSE_HEARTBEAT_MS - 1);
    expect(s.chunks).toEqual([HELLO]);
    await s.clock.advance(1);
    expect(s.chunks).toEqual([HELLO, ': heartbeat\n\n']);
    await s.clock.advance(SSE_HEARTBEAT_MS);
    expect(s.chunks).toEqual([HELLO, ': heartbeat\n\n', ': heartbeat\n\n']);
    s.abort.abort();
    await s.reading;
  });

  it('counts the heartbeat from the last message sent', async () => {
    const s = setup({ heartbeatMs: 1_000 });
    await settle();
    await s.clock.advance(600);
    s.bus.publish(leader('a'));
    await s.clock.advance(600);
    expect(s.chunks.filter((c) => c.startsWith(': heartbeat'))).toEqual([]);
    await s.clock.advance(400);
    expect(s.chunks.at(-1)).toBe(': heartbeat\n\n');
    s.abort.abort();
    await s.reading;
  });

  it('tells a slow client how many events it lost before the oldest it still gets', async () => {
    const s = setup({ bufferSize: 2 });
    await settle();
    for (const id of ['1', '2', '3', '4', '5']) s.bus.publish(leader(id));
    await settle();
    expect(s.chunks.slice(1)).toEqual([
      formatSseEvent(1, 'events.dropped', { type: 'events.dropped', dropped: 3, totalDropped: 3 }),
      formatSseEvent(2, 'leader.changed', leader('4')),
      formatSseEvent(3, 'leader.changed', leader('5')),
    ]);
    expect(s.dropped).toEqual([3]);

    for (const id of ['6', '7', '8']) s.bus.publish(leader(id));
    await settle();
    expect(s.chunks.slice(4)).toEqual([
      formatSseEvent(4, 'events.dropped', { type: 'events.dropped', dropped: 1, totalDropped: 4 }),
      formatSseEvent(5, 'leader.changed', leader('7')),
      formatSseEvent(6, 'leader.changed', leader('8')),
    ]);
    expect(s.dropped).toEqual([3, 1]);
    s.abort.abort();
    await s.reading;
  });

  it('ends at once when its signal aborts, leaving no subscription and no timer behind', async () => {
    const s = setup();
    await settle();
    expect(s.bus.subscriberCount).toBe(1);
    expect(s.clock.pendingTimers).toBe(1);
    s.abort.abort();
    await s.reading;
    expect(s.ended).toBe(true);
    expect(s.bus.subscriberCount).toBe(0);
    expect(s.clock.pendingTimers).toBe(0);
  });

  it('ends when the consumer stops reading it, and unsubscribes', async () => {
    const bus = new EventBus<ServiceEvent>();
    const stream = sseStream({ bus, clock: new FakeClock(), signal: new AbortController().signal });
    await stream.next();
    expect(bus.subscriberCount).toBe(1);
    await stream.return(undefined);
    expect(bus.subscriberCount).toBe(0);
  });

  it('ends at once when created with an aborted signal', async () => {
    const bus = new EventBus<ServiceEvent>();
    const clock = new FakeClock();
    const chunks: string[] = [];
    for await (const chunk of sseStream({ bus, clock, signal: AbortSignal.abort() })) {
      chunks.push(chunk);
    }
    expect(chunks).toEqual([HELLO]);
    expect(bus.subscriberCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('SERVICE_EVENT_TYPES', () => {
  it('lists every type the service publishes, once, so ?types= accepts each of them', () => {
    // A type added to ServiceEvent but not here fails to compile: the record must name them all.
    const every: Record<ServiceEvent['type'], true> = {
      'reconciliation.triggered': true,
      'reconciliation.started': true,
      'phase.completed': true,
      'reconciliation.failed': true,
      'reconciliation.completed': true,
      'sink.applied': true,
      'sink.failed': true,
      'store.synced': true,
      'cell.changed': true,
      'watch.state': true,
      'leadership.acquired': true,
      'leadership.lost': true,
      'leader.changed': true,
    };
    expect([...SERVICE_EVENT_TYPES].sort()).toEqual(Object.keys(every).sort());
  });
});
