import { describe, expect, it } from 'vitest';
import { EventBus, type Subscription } from '../../src/index.js';
import { settle } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';

type Event = { type: 'a'; n: number } | { type: 'b'; n: number };

const a = (n: number): Event => ({ type: 'a', n });
const b = (n: number): Event => ({ type: 'b', n });

/** Takes `count` events from a subscription's iterator. */
async function take(iterator: AsyncIterator<Event>, count: number): Promise<Event[]> {
  const out: Event[] = [];
  for (let i = 0; i < count; i += 1) {
    const next = await iterator.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

/** Collects everything until the iteration ends. */
async function drain(subscription: Subscription<Event>): Promise<Event[]> {
  const out: Event[] = [];
  for await (const event of subscription) out.push(event);
  return out;
}

describe('EventBus publishing', () => {
  it('delivers to every open subscription in publish order, nothing published before it subscribed', async () => {
    const bus = new EventBus<Event>();
    bus.publish(a(0));
    const first = bus.subscribe();
    const second = bus.subscribe();
    bus.publish(a(1));
    bus.publish(b(2));
    expect(await take(first[Symbol.asyncIterator](), 2)).toEqual([a(1), b(2)]);
    expect(await take(second[Symbol.asyncIterator](), 2)).toEqual([a(1), b(2)]);
  });

  it('is synchronous and returns before any consumer runs', () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe();
    const iterator = subscription[Symbol.asyncIterator]();
    let got: unknown;
    void iterator.next().then((r) => {
      got = r.value;
    });
    bus.publish(a(1));
    expect(got).toBeUndefined();
  });

  it('wakes a consumer waiting for the next event', async () => {
    const bus = new EventBus<Event>();
    const iterator = bus.subscribe()[Symbol.asyncIterator]();
    const next = iterator.next();
    await settle(2);
    bus.publish(a(7));
    await expect(next).resolves.toEqual({ value: a(7), done: false });
  });

  it('filters by types, and types: [] receives nothing', async () => {
    const bus = new EventBus<Event>();
    const onlyB = bus.subscribe({ types: ['b'] });
    const none = bus.subscribe({ types: [] });
    bus.publish(a(1));
    bus.publish(b(2));
    bus.publish(a(3));
    bus.publish(b(4));
    expect(await take(onlyB[Symbol.asyncIterator](), 2)).toEqual([b(2), b(4)]);
    const noneNext = none[Symbol.asyncIterator]().next();
    await settle(2);
    none.close();
    await expect(noneNext).resolves.toEqual({ value: undefined, done: true });
    expect(none.dropped).toBe(0);
    expect(bus.subscriberCount).toBe(1);
  });

  it('never throws from publish, even when delivery fails', () => {
    const logger = new RecordingLogger();
    const bus = new EventBus<Event>({ logger });
    bus.subscribe({ types: ['a'] });
    expect(() => bus.publish(null as unknown as Event)).not.toThrow();
    expect(logger.at('error')).toHaveLength(1);
  });
});

describe('EventBus buffering', () => {
  it('drops the oldest event when a subscription is full and counts only those drops', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe({ bufferSize: 3 });
    for (let n = 1; n <= 5; n += 1) bus.publish(a(n));
    expect(subscription.dropped).toBe(2);
    const iterator = subscription[Symbol.asyncIterator]();
    expect(await take(iterator, 3)).toEqual([a(3), a(4), a(5)]);
    bus.publish(a(6));
    expect(await take(iterator, 1)).toEqual([a(6)]);
    subscription.close(); // discarding on close is not a drop
    expect(subscription.dropped).toBe(2);
  });

  it('counts an overflow that happens before a waiting consumer gets to run', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe({ bufferSize: 1 });
    const consumed = drain(subscription); // already waiting in next()
    bus.publish(a(1));
    bus.publish(a(2));
    await settle(2);
    bus.publish(a(3));
    await settle(2);
    subscription.close();
    await expect(consumed).resolves.toEqual([a(2), a(3)]);
    expect(subscription.dropped).toBe(1);
  });

  it('buffers 1024 events by default', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe();
    for (let n = 0; n < 1025; n += 1) bus.publish(a(n));
    expect(subscription.dropped).toBe(1);
    expect((await take(subscription[Symbol.asyncIterator](), 1))[0]).toEqual(a(1));
  });

  it('does not count events filtered out by types as dropped', () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe({ types: ['a'], bufferSize: 1 });
    bus.publish(b(1));
    bus.publish(b(2));
    expect(subscription.dropped).toBe(0);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'throws RangeError for bufferSize %s',
    (bufferSize) => {
      const bus = new EventBus<Event>();
      expect(() => bus.subscribe({ bufferSize })).toThrow(RangeError);
      expect(bus.subscriberCount).toBe(0);
    },
  );
});

describe('EventBus subscription lifetime', () => {
  it('counts open subscriptions', () => {
    const bus = new EventBus<Event>();
    const first = bus.subscribe();
    bus.subscribe();
    expect(bus.subscriberCount).toBe(2);
    first.close();
    first.close(); // idempotent
    expect(bus.subscriberCount).toBe(1);
  });

  it('ends iteration on close(), discarding what was buffered', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe();
    bus.publish(a(1));
    subscription.close();
    bus.publish(a(2));
    expect(await drain(subscription)).toEqual([]);
  });

  it('ends a pending next() when closed', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe();
    const consumed = drain(subscription);
    bus.publish(a(1));
    await settle(2);
    subscription.close();
    await expect(consumed).resolves.toEqual([a(1)]);
  });

  it('ends and detaches when its signal aborts', async () => {
    const bus = new EventBus<Event>();
    const controller = new AbortController();
    const subscription = bus.subscribe({ signal: controller.signal });
    const consumed = drain(subscription);
    bus.publish(a(1));
    await settle(2);
    controller.abort();
    await expect(consumed).resolves.toEqual([a(1)]);
    expect(bus.subscriberCount).toBe(0);
  });

  it('gives a closed subscription for an already-aborted signal, never counted', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe({ signal: AbortSignal.abort() });
    expect(bus.subscriberCount).toBe(0);
    bus.publish(a(1));
    expect(await drain(subscription)).toEqual([]);
  });

  it('detaches when the consumer breaks out of the loop', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe();
    bus.publish(a(1));
    bus.publish(a(2));
    for await (const event of subscription) {
      expect(event).toEqual(a(1));
      break;
    }
    expect(bus.subscriberCount).toBe(0);
    bus.publish(a(3));
    expect(subscription.dropped).toBe(0);
  });

  it('throws TypeError at once when asked for a second iterator', () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe();
    subscription[Symbol.asyncIterator]();
    expect(() => subscription[Symbol.asyncIterator]()).toThrow(TypeError);
  });

  it('keeps publishing to others while one consumer never reads', async () => {
    const bus = new EventBus<Event>();
    const stuck = bus.subscribe({ bufferSize: 2 });
    const live = bus.subscribe();
    const iterator = live[Symbol.asyncIterator]();
    for (let n = 0; n < 100; n += 1) bus.publish(a(n));
    expect(stuck.dropped).toBe(98);
    expect((await take(iterator, 100)).map((e) => e.n)).toEqual([...Array(100).keys()]);
  });
});

describe('EventBus.listen', () => {
  it('calls a listener synchronously with every event from then on, until it is removed', () => {
    const bus = new EventBus<{ type: string; n: number }>();
    bus.publish({ type: 'a', n: 0 });
    const seen: number[] = [];
    const stop = bus.listen((event) => seen.push(event.n));
    bus.publish({ type: 'a', n: 1 });
    expect(seen).toEqual([1]);
    stop();
    bus.publish({ type: 'a', n: 2 });
    expect(seen).toEqual([1]);
    expect(bus.subscriberCount).toBe(0);
  });

  it('keeps publishing to others when a listener throws', () => {
    const bus = new EventBus<{ type: string }>();
    const seen: string[] = [];
    bus.listen(() => {
      throw new Error('boom');
    });
    bus.listen((event) => seen.push(event.type));
    bus.publish({ type: 'a' });
    expect(seen).toEqual(['a']);
  });
});
