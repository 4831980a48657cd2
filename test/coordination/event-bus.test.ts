/**
 * What the coordination contract suite (test/coordination-contract/event-bus.test.ts) does not
 * already pin down about the EventBus: a delivery that throws, an overflow that happens before a
 * waiting consumer runs, and synchronous listeners.
 */
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/index.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { until } from '../support/until.js';

type Event = { type: 'a'; n: number } | { type: 'b'; n: number };

const a = (n: number): Event => ({ type: 'a', n });

describe('EventBus publishing', () => {
  it('never throws from publish, even when delivery fails', () => {
    const logger = new RecordingLogger();
    const bus = new EventBus<Event>({ logger });
    bus.subscribe({ types: ['a'] });
    expect(() => bus.publish(null as unknown as Event)).not.toThrow();
    expect(logger.at('error')).toHaveLength(1);
  });
});

describe('EventBus buffering', () => {
  it('counts an overflow that happens before a waiting consumer gets to run', async () => {
    const bus = new EventBus<Event>();
    const subscription = bus.subscribe({ bufferSize: 1 });
    const items: Event[] = [];
    const consumed = (async () => {
      for await (const event of subscription) items.push(event); // already waiting in next()
    })();
    bus.publish(a(1));
    bus.publish(a(2));
    await until(() => items.length === 1, { what: 'the consumer to read the newest event' });
    bus.publish(a(3));
    await until(() => items.length === 2, { what: 'the consumer to read the next event' });
    subscription.close();
    await consumed;
    expect(items).toEqual([a(2), a(3)]);
    expect(subscription.dropped).toBe(1);
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
