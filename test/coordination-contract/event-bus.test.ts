import { describe, expect, it } from 'vitest';
import { EventBus, type Subscription } from '../../src/index.js';
import { finishes, RecordingLogger, track, until } from './harness.js';

type E = { type: 'a'; n: number } | { type: 'b'; n: number } | { type: 'c'; n: number };

const a = (n: number): E => ({ type: 'a', n });
const b = (n: number): E => ({ type: 'b', n });
const c = (n: number): E => ({ type: 'c', n });

/** Iterates a subscription in the background, collecting what it yields. */
function consume(sub: Subscription<E>) {
  const items: E[] = [];
  let done = false;
  const loop = (async () => {
    for await (const event of sub) items.push(event);
    done = true;
  })();
  return {
    items,
    loop,
    get done() {
      return done;
    },
  };
}

/** Takes whatever is buffered: closes the subscription after reading `count` events. */
async function take(sub: Subscription<E>, count: number): Promise<E[]> {
  const items: E[] = [];
  if (count === 0) return items;
  for await (const event of sub) {
    items.push(event);
    if (items.length === count) break;
  }
  return items;
}

describe('EventBus publish', () => {
  it('publishes synchronously without subscribers, never throwing or returning a promise', () => {
    const bus = new EventBus<E>();
    expect(bus.publish(a(1))).toBeUndefined();
    expect(bus.subscriberCount).toBe(0);
  });

  it('accepts a logger option', () => {
    expect(() => new EventBus<E>({ logger: new RecordingLogger() })).not.toThrow();
  });

  it('appends each published event to every open subscription in publish order', async () => {
    const bus = new EventBus<E>();
    const one = bus.subscribe();
    const two = bus.subscribe();
    bus.publish(a(1));
    bus.publish(b(2));
    bus.publish(c(3));
    expect(await take(one, 3)).toEqual([a(1), b(2), c(3)]);
    expect(await take(two, 3)).toEqual([a(1), b(2), c(3)]);
  });

  it('delivers an event published after the iterator started waiting', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    const iterator = sub[Symbol.asyncIterator]();
    const next = track(iterator.next());
    expect(next.settled).toBe(false);
    bus.publish(a(7));
    await until(() => next.settled, { what: 'the waiting next() to resolve' });
    expect(next.value).toEqual({ done: false, value: a(7) });
  });

  it('does not deliver events published before the subscription existed', async () => {
    const bus = new EventBus<E>();
    bus.publish(a(1));
    const sub = bus.subscribe();
    bus.publish(a(2));
    expect(await take(sub, 1)).toEqual([a(2)]);
  });

  it('delivers only the listed types when types is given', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe({ types: ['a', 'c'] });
    bus.publish(a(1));
    bus.publish(b(2));
    bus.publish(c(3));
    bus.publish(b(4));
    bus.publish(a(5));
    expect(await take(sub, 3)).toEqual([a(1), c(3), a(5)]);
  });

  it('delivers nothing to a subscription with types: []', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe({ types: [] });
    const drained = consume(sub);
    const all = consume(bus.subscribe());
    bus.publish(a(1));
    bus.publish(b(2));
    // A subscription without a filter got both: the empty filter had its chance too.
    await until(() => all.items.length === 2, { what: 'the unfiltered subscription to get both' });
    sub.close();
    await drained.loop;
    expect(drained.items).toEqual([]);
    expect(sub.dropped).toBe(0);
  });

  it('never waits for a slow consumer: publishing into a full buffer returns at once', () => {
    const bus = new EventBus<E>();
    bus.subscribe({ bufferSize: 1 });
    for (let i = 0; i < 10_000; i += 1) expect(bus.publish(a(i))).toBeUndefined();
  });
});

describe('EventBus buffers', () => {
  it('keeps 1024 events by default, discarding the oldest and counting them in dropped', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    for (let i = 0; i < 1_030; i += 1) bus.publish(a(i));
    expect(sub.dropped).toBe(6);
    const items = await take(sub, 1_024);
    expect(items[0]).toEqual(a(6));
    expect(items.at(-1)).toEqual(a(1_029));
  });

  it('does not drop anything while the default buffer is exactly full', () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    for (let i = 0; i < 1_024; i += 1) bus.publish(a(i));
    expect(sub.dropped).toBe(0);
  });

  it('drops the oldest buffered events of a full bufferSize buffer and yields the newest in order', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe({ bufferSize: 2 });
    for (let i = 1; i <= 5; i += 1) bus.publish(a(i));
    expect(sub.dropped).toBe(3);
    expect(await take(sub, 2)).toEqual([a(4), a(5)]);
  });

  it('gives every subscription its own buffer', async () => {
    const bus = new EventBus<E>();
    const small = bus.subscribe({ bufferSize: 1 });
    const large = bus.subscribe({ bufferSize: 10 });
    for (let i = 1; i <= 3; i += 1) bus.publish(a(i));
    expect(small.dropped).toBe(2);
    expect(large.dropped).toBe(0);
    expect(await take(small, 1)).toEqual([a(3)]);
    expect(await take(large, 3)).toEqual([a(1), a(2), a(3)]);
  });

  it('counts only overflow discards in dropped (not filtered events, not events discarded by close)', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe({ types: ['a'], bufferSize: 2 });
    bus.publish(b(1));
    bus.publish(a(2));
    bus.publish(a(3));
    expect(sub.dropped).toBe(0);
    sub.close();
    expect(sub.dropped).toBe(0);
  });

  it('goes on delivering after a consumer caught up with an overflowed buffer', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe({ bufferSize: 1 });
    bus.publish(a(1));
    bus.publish(a(2)); // overflow: a(1) dropped before anyone read it
    const drained = consume(sub);
    await until(() => drained.items.length > 0, { what: 'the buffered event' });
    expect(drained.items).toEqual([a(2)]);
    bus.publish(a(3));
    await until(() => drained.items.length > 1, { what: 'the event after the overflow' });
    sub.close();
    await drained.loop;
    expect(drained.items).toEqual([a(2), a(3)]);
    expect(sub.dropped).toBe(1);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'throws a RangeError for bufferSize %s',
    (bufferSize) => {
      const bus = new EventBus<E>();
      expect(() => bus.subscribe({ bufferSize })).toThrow(RangeError);
      expect(bus.subscriberCount).toBe(0);
    },
  );

  it('accepts bufferSize 1', () => {
    const bus = new EventBus<E>();
    expect(() => bus.subscribe({ bufferSize: 1 })).not.toThrow();
  });
});

describe('EventBus subscription lifetime', () => {
  it('counts open subscriptions in subscriberCount', () => {
    const bus = new EventBus<E>();
    const one = bus.subscribe();
    bus.subscribe();
    expect(bus.subscriberCount).toBe(2);
    one.close();
    expect(bus.subscriberCount).toBe(1);
  });

  it('ends a waiting iteration on close(), removes the subscription and discards buffered events', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    const drained = consume(sub);
    bus.publish(a(1));
    await until(() => drained.items.length > 0, { what: 'the published event' });
    expect(drained.items).toEqual([a(1)]);
    expect(drained.done).toBe(false);

    sub.close();
    await until(() => drained.done, { what: 'the iteration to end' });
    expect(bus.subscriberCount).toBe(0);
    bus.publish(a(2)); // the iteration ended: nothing can reach it any more
    expect(drained.items).toEqual([a(1)]);
  });

  it('discards events still buffered when close() is called before they are read', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    bus.publish(a(1));
    bus.publish(a(2));
    sub.close();
    const drained = consume(sub);
    await drained.loop;
    expect(drained.items).toEqual([]);
  });

  it('treats close() as idempotent', () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    bus.subscribe();
    sub.close();
    expect(() => sub.close()).not.toThrow();
    expect(bus.subscriberCount).toBe(1);
  });

  it('ends the iteration when its signal aborts and removes the subscription', async () => {
    const bus = new EventBus<E>();
    const controller = new AbortController();
    const sub = bus.subscribe({ signal: controller.signal });
    const drained = consume(sub);
    bus.publish(a(1));
    await until(() => drained.items.length > 0, { what: 'the published event' });
    expect(bus.subscriberCount).toBe(1);

    controller.abort();
    await until(() => drained.done, { what: 'the iteration to end' });
    expect(drained.items).toEqual([a(1)]);
    expect(bus.subscriberCount).toBe(0);
  });

  it('discards buffered events when its signal aborts', async () => {
    const bus = new EventBus<E>();
    const controller = new AbortController();
    const sub = bus.subscribe({ signal: controller.signal });
    bus.publish(a(1));
    controller.abort();
    expect(bus.subscriberCount).toBe(0);
    const drained = consume(sub);
    await drained.loop;
    expect(drained.items).toEqual([]);
  });

  it('gives a closed subscription for an already-aborted signal: never counted, iteration ends at once', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe({ signal: AbortSignal.abort() });
    expect(bus.subscriberCount).toBe(0);
    bus.publish(a(1));
    const drained = consume(sub);
    await finishes(drained.loop, { what: 'the iteration' });
    expect(drained.done).toBe(true);
    expect(drained.items).toEqual([]);
    expect(bus.subscriberCount).toBe(0);
  });

  it('removes the subscription when the consumer breaks out of the loop', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    bus.publish(a(1));
    bus.publish(a(2));
    for await (const event of sub) {
      expect(event).toEqual(a(1));
      break;
    }
    expect(bus.subscriberCount).toBe(0);
    // the second buffered event is discarded, and nothing more is taken in
    bus.publish(a(3));
    expect(bus.subscriberCount).toBe(0);
  });

  it('throws a TypeError at once when asked for a second iterator', () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    sub[Symbol.asyncIterator]();
    expect(() => sub[Symbol.asyncIterator]()).toThrow(TypeError);
  });

  it('throws a TypeError for a second iterator even after the first one ended', async () => {
    const bus = new EventBus<E>();
    const sub = bus.subscribe();
    bus.publish(a(1));
    await take(sub, 1);
    expect(() => sub[Symbol.asyncIterator]()).toThrow(TypeError);
  });

  it('keeps other subscriptions receiving when one closes', async () => {
    const bus = new EventBus<E>();
    const gone = bus.subscribe();
    const kept = bus.subscribe();
    gone.close();
    bus.publish(a(1));
    expect(await take(kept, 1)).toEqual([a(1)]);
  });
});
