import { getEventListeners } from 'node:events';
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/coordination/event-bus.js';
import {
  EventStreams,
  formatSseEvent,
  SSE_HEARTBEAT_MS,
  SSE_RETRY_MS,
} from '../../src/service/event-stream.js';
import { SERVICE_EVENT_TYPES, type ServiceEvent } from '../../src/service/service-events.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const HELLO = `retry: ${SSE_RETRY_MS}\n: connected; heartbeat every 15s\n\n`;
const EPOCH = 'feedbeef';
/** The wall clock the fake clock's 0 stands for. */
const WALL_START = Date.parse('2026-01-02T03:04:05.000Z');

/** The message the stream sends for event number `seq`, published at fake-clock time `atMs`. */
function message<E extends { type: string }>(seq: number, event: E, atMs = 0): string {
  const time = new Date(WALL_START + atMs).toISOString();
  return formatSseEvent(`${EPOCH}-${seq}`, event.type, { ...event, time });
}

function leader(identity: string): ServiceEvent {
  return { type: 'leader.changed', identity };
}

/** A stream's consumer: reads whenever `reading` is on, as a socket that drains would. */
function consume(stream: Readable) {
  const chunks: string[] = [];
  let ended = false;
  const waiters: Array<() => void> = [];
  const wake = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    chunks.push(chunk);
    wake();
  });
  stream.on('end', () => {
    ended = true;
    wake();
  });
  stream.on('close', () => {
    ended = true;
    wake();
  });
  return {
    get text() {
      return chunks.join('');
    },
    get ended() {
      return ended;
    },
    /** Resolves once the text received satisfies `check`, or the stream ends. */
    async until(check: (text: string) => boolean): Promise<string> {
      while (!check(chunks.join('')) && !ended) {
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
      return chunks.join('');
    },
  };
}

function setup(
  options: {
    maxBytes?: number;
    maxStreams?: number;
    heartbeatMs?: number;
    historyEvents?: number;
    historyBytes?: number;
  } = {},
) {
  const bus = new EventBus<ServiceEvent>();
  const clock = new FakeClock();
  const dropped: number[] = [];
  const streams = new EventStreams({
    bus,
    clock,
    wallClock: () => WALL_START + clock.now(),
    epoch: EPOCH,
    ...options,
    onDropped: (count) => dropped.push(count),
  });
  return { bus, clock, dropped, streams };
}

describe('formatSseEvent', () => {
  it('writes id, event and one data line of JSON, ended by a blank line', () => {
    expect(formatSseEvent('e-7', 'leader.changed', { type: 'leader.changed', identity: 'a' })).toBe(
      'id: e-7\nevent: leader.changed\ndata: {"type":"leader.changed","identity":"a"}\n\n',
    );
  });

  it('keeps a multi-line value on one data line', () => {
    expect(formatSseEvent(1, 'x', { text: 'a\nb' })).toBe(
      'id: 1\nevent: x\ndata: {"text":"a\\nb"}\n\n',
    );
  });
});

describe('EventStreams', () => {
  it('opens with the retry field and a comment, then sends every event in publish order with increasing ids and its time', async () => {
    const s = setup();
    const abort = new AbortController();
    const client = consume(s.streams.open({ signal: abort.signal })!);
    await client.until((t) => t === HELLO);
    s.bus.publish(leader('a'));
    await s.clock.advance(1_500);
    s.bus.publish({ type: 'store.synced', objects: 2, cells: 1 });
    const text = await client.until((t) => t.includes('store.synced'));
    expect(text).toBe(
      HELLO +
        `id: ${EPOCH}-1\nevent: leader.changed\ndata: {"type":"leader.changed","identity":"a","time":"2026-01-02T03:04:05.000Z"}\n\n` +
        `id: ${EPOCH}-2\nevent: store.synced\ndata: {"type":"store.synced","objects":2,"cells":1,"time":"2026-01-02T03:04:06.500Z"}\n\n`,
    );
    abort.abort();
    await client.until(() => false);
    expect(client.ended).toBe(true);
  });

  it('sends only the asked-for types', async () => {
    const s = setup();
    const client = consume(
      s.streams.open({ types: ['store.synced'], signal: new AbortController().signal })!,
    );
    s.bus.publish(leader('a'));
    s.bus.publish({ type: 'store.synced', objects: 0, cells: 0 });
    s.bus.publish(leader('b'));
    s.bus.publish({ type: 'store.synced', objects: 1, cells: 1 });
    const text = await client.until((t) => t.includes('"objects":1'));
    // Ids are of the process, not of the connection: the skipped events keep their numbers.
    expect(text).toBe(
      HELLO +
        message(2, { type: 'store.synced', objects: 0, cells: 0 }) +
        message(4, { type: 'store.synced', objects: 1, cells: 1 }),
    );
    s.streams.close();
  });

  it('without Last-Event-ID, sends only events published after the client connected', async () => {
    const s = setup();
    s.bus.publish(leader('early'));
    const client = consume(s.streams.open({ signal: new AbortController().signal })!);
    s.bus.publish(leader('late'));
    const text = await client.until((t) => t.includes('late'));
    expect(text).toBe(HELLO + message(2, leader('late')));
    s.streams.close();
  });

  it('resumes after Last-Event-ID: first the held events the client missed (of its types), then live ones', async () => {
    const s = setup();
    s.bus.publish(leader('a'));
    s.bus.publish({ type: 'store.synced', objects: 1, cells: 1 });
    s.bus.publish(leader('b'));
    s.bus.publish(leader('c'));
    const client = consume(
      s.streams.open({
        types: ['leader.changed'],
        signal: new AbortController().signal,
        lastEventId: `${EPOCH}-1`,
      })!,
    );
    s.bus.publish(leader('d'));
    const text = await client.until((t) => t.includes('"d"'));
    expect(text).toBe(
      HELLO + message(3, leader('b')) + message(4, leader('c')) + message(5, leader('d')),
    );
    s.streams.close();
  });

  it('resuming from the newest id sends nothing old, and misses nothing published while away', async () => {
    const s = setup();
    s.bus.publish(leader('a'));
    const first = s.streams.open({ signal: new AbortController().signal })!;
    first.destroy();
    s.bus.publish(leader('while away'));
    const client = consume(
      s.streams.open({ signal: new AbortController().signal, lastEventId: `${EPOCH}-1` })!,
    );
    const text = await client.until((t) => t.includes('while away'));
    expect(text).toBe(HELLO + message(2, leader('while away')));
    s.streams.close();
  });

  it('says how many events are lost when Last-Event-ID is older than the history, then sends what is held', async () => {
    const s = setup({ historyEvents: 3 });
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) s.bus.publish(leader(name));
    const client = consume(
      s.streams.open({ signal: new AbortController().signal, lastEventId: `${EPOCH}-1` })!,
    );
    const text = await client.until((t) => t.includes('"f"'));
    // Held: 4, 5, 6. Lost after 1: 2 and 3; the notice has the id of the newest lost.
    expect(text).toBe(
      HELLO +
        message(3, { type: 'events.missed', missed: 2 }) +
        message(4, leader('d')) +
        message(5, leader('e')) +
        message(6, leader('f')),
    );
    s.streams.close();
  });

  it('says the loss is unknown, and replays nothing, for an id of another process or one never sent', async () => {
    const s = setup();
    s.bus.publish(leader('a'));
    s.bus.publish(leader('b'));
    for (const lastEventId of ['0badcafe-1', `${EPOCH}-3`, 'not an id']) {
      const client = consume(
        s.streams.open({ signal: new AbortController().signal, lastEventId })!,
      );
      const text = await client.until((t) => t.includes('events.missed'));
      expect(text).toBe(HELLO + message(2, { type: 'events.missed', missed: null }));
    }
    s.streams.close();
  });

  it('keeps the history while no stream is open, bounded in bytes as well as in events', async () => {
    const s = setup({ historyBytes: 1_000 });
    const big = (i: number): ServiceEvent => ({
      type: 'leader.changed',
      identity: `${i}`.padEnd(300, 'x'),
    });
    for (let i = 1; i <= 10; i += 1) s.bus.publish(big(i));
    const history = s.streams.history;
    expect(history.bytes).toBeLessThanOrEqual(1_000);
    expect(history.size).toBe(Math.floor(1_000 / Buffer.byteLength(message(10, big(10)))));
    expect(history.latest).toBe(10);
    const client = consume(
      s.streams.open({ signal: new AbortController().signal, lastEventId: `${EPOCH}-0` })!,
    );
    const text = await client.until((t) => t.includes('"identity":"10'));
    const missed = 10 - history.size;
    expect(text.startsWith(HELLO + message(missed, { type: 'events.missed', missed }))).toBe(true);
    s.streams.close();
  });

  it('sends a heartbeat comment every 15 s while open, by the injected clock', async () => {
    const s = setup();
    const client = consume(s.streams.open({ signal: new AbortController().signal })!);
    await client.until((t) => t === HELLO);
    await s.clock.advance(SSE_HEARTBEAT_MS - 1);
    expect(client.text).toBe(HELLO);
    await s.clock.advance(1);
    await client.until((t) => t.endsWith(': heartbeat\n\n'));
    await s.clock.advance(SSE_HEARTBEAT_MS);
    const text = await client.until((t) => t.split(': heartbeat').length === 3);
    expect(text).toBe(`${HELLO}: heartbeat\n\n: heartbeat\n\n`);
    s.streams.close();
  });

  it('serializes each event once, into bytes every stream shares', async () => {
    const s = setup();
    const clients = [1, 2, 3].map(() =>
      consume(s.streams.open({ signal: new AbortController().signal })!),
    );
    let serialized = 0;
    const event = {
      ...leader('a'),
      toJSON() {
        serialized += 1;
        return { type: 'leader.changed', identity: 'a' };
      },
    } as unknown as ServiceEvent;
    s.bus.publish(event);
    for (const client of clients) await client.until((t) => t.includes('"identity":"a"'));
    expect(serialized).toBe(1);
    s.streams.close();
  });

  it('bounds a client that does not read in bytes, drops its oldest events, and tells it how many before the next', async () => {
    const s = setup({ maxBytes: 2_000 });
    const stream = s.streams.open({ signal: new AbortController().signal })!;
    // Not read yet: everything stays queued, up to the bound.
    const big = (i: number): ServiceEvent => ({
      type: 'leader.changed',
      identity: `${i}`.padEnd(300, 'x'),
    });
    for (let i = 0; i < 100; i += 1) s.bus.publish(big(i));
    const client = consume(stream);
    const text = await client.until((t) => t.includes('"identity":"99'));
    const notice = /event: events\.dropped\ndata: (.*)\n/.exec(text);
    expect(notice).not.toBeNull();
    const { dropped, totalDropped } = JSON.parse(notice![1]!);
    expect(dropped).toBe(totalDropped);
    // What is left fits the bound (plus the one event that was queued last).
    const kept = text.match(/^event: leader\.changed$/gm)!.length;
    expect(kept + dropped).toBe(100);
    expect(kept * 330).toBeLessThanOrEqual(2_000 + 330);
    expect(s.dropped).toEqual([dropped]);
    // The notice comes first, with the next id; then the newest events in order.
    expect(text.indexOf('event: events.dropped')).toBeLessThan(
      text.indexOf('event: leader.changed'),
    );
    // Its id is the newest dropped event's: resuming from it replays only what was kept.
    expect(text).toContain(`id: ${EPOCH}-${dropped}\nevent: events.dropped`);
    expect(text).toContain(`id: ${EPOCH}-${dropped + 1}\nevent: leader.changed`);
    s.streams.close();
  });

  it('refuses a stream beyond the cap, and has room again once one ends', () => {
    const s = setup({ maxStreams: 2 });
    const a = new AbortController();
    expect(s.streams.open({ signal: a.signal })).toBeDefined();
    expect(s.streams.open({ signal: new AbortController().signal })).toBeDefined();
    expect(s.streams.open({ signal: new AbortController().signal })).toBeUndefined();
    a.abort();
    expect(s.streams.count).toBe(1);
    expect(s.streams.open({ signal: new AbortController().signal })).toBeDefined();
    s.streams.close();
  });

  it('leaves nothing behind when a stream ends: no listener on its signal, no timer', async () => {
    const s = setup();
    const abort = new AbortController();
    const client = consume(s.streams.open({ signal: abort.signal })!);
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(1);
    expect(s.clock.pendingTimers).toBe(1);
    expect(s.streams.count).toBe(1);
    abort.abort();
    await client.until(() => false);
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
    expect(s.streams.count).toBe(0);
    await until(() => s.clock.pendingTimers === 0, {
      what: "the ended stream's heartbeat cleared",
    });
    // A stream its consumer destroys ends the same way.
    const other = new AbortController();
    const stream = s.streams.open({ signal: other.signal })!;
    stream.destroy();
    await until(() => getEventListeners(other.signal, 'abort').length === 0, {
      what: "the destroyed stream's abort listener removed",
    });
    expect(s.streams.count).toBe(0);
  });

  it('listens to the bus from construction to close(): the history records until then', () => {
    const s = setup();
    s.bus.publish(leader('before any stream'));
    expect(s.streams.history.latest).toBe(1);
    s.streams.close();
    s.bus.publish(leader('after close'));
    expect(s.streams.history.latest).toBe(1);
  });

  it('ends at once when opened with an aborted signal, or after close()', async () => {
    const s = setup();
    const early = consume(s.streams.open({ signal: AbortSignal.abort() })!);
    expect(await early.until(() => false)).toBe(HELLO);
    s.streams.close();
    const late = consume(s.streams.open({ signal: new AbortController().signal })!);
    expect(await late.until(() => false)).toBe(HELLO);
    expect(s.streams.count).toBe(0);
    expect(s.clock.pendingTimers).toBe(0);
  });

  it('close() destroys a stream whose client has not taken what is queued, so shutdown never waits on it', async () => {
    const s = setup();
    const stream = s.streams.open({ signal: new AbortController().signal })!;
    s.bus.publish(leader('a'));
    const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()));
    s.streams.close();
    await closed;
    expect(stream.destroyed).toBe(true);
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
      'sink.observed': true,
      'pool.panic': true,
      'pool.capacity': true,
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
