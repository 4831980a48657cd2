import { describe, expect, it } from 'vitest';
import {
  ResourceApiError,
  type ResourceCall,
} from '../../src/kubernetes/client/resource-api-error.js';
import type { EventApi, KubernetesEvent } from '../../src/kubernetes/resources/event-api.js';
import {
  EVENT_BURST_PER_OBJECT,
  EVENT_REFILL_MS,
  type EventDropCause,
  type EventOccurrence,
  EventRecorder,
  MAX_EVENT_NOTE_BYTES,
  MAX_EVENT_WRITE_ATTEMPTS,
  SERIES_FINISH_MS,
  SERIES_UPDATE_INTERVAL_MS,
} from '../../src/kubernetes/resources/event-recorder.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

function eventCall(verb: 'CREATE' | 'PATCH'): ResourceCall {
  return { verb, resource: 'Event', target: 'ns/x' };
}

type Call =
  | { verb: 'create'; event: KubernetesEvent }
  | { verb: 'patch'; name: string; series: { count: number; lastObservedTime: string } };

/** The Event API as calls recorded in order, each answered by `answer` (default: success). */
class RecordingEventApi implements EventApi {
  readonly calls: Call[] = [];
  answer: (call: Call) => Error | undefined = () => undefined;
  /** Never answers while set: an API server that accepts and hangs. */
  hang = false;
  #waiters: Array<{ count: number; resolve: () => void }> = [];

  async create(event: KubernetesEvent): Promise<void> {
    await this.#call({ verb: 'create', event });
  }

  async patchSeries(
    _namespace: string,
    name: string,
    series: { count: number; lastObservedTime: string },
  ): Promise<void> {
    await this.#call({ verb: 'patch', name, series });
  }

  /** Resolves once `count` calls were made. */
  calledTimes(count: number): Promise<void> {
    if (this.calls.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  async #call(call: Call): Promise<void> {
    this.calls.push(call);
    for (const waiter of this.#waiters.filter((w) => this.calls.length >= w.count))
      waiter.resolve();
    this.#waiters = this.#waiters.filter((w) => this.calls.length < w.count);
    if (this.hang) await new Promise(() => {});
    const error = this.answer(call);
    if (error) throw error;
  }
}

const pod = (name: string) => ({
  apiVersion: 'v1' as const,
  kind: 'Pod' as const,
  namespace: 'ns',
  name,
  uid: `uid-${name}`,
});
const notAlive = (name = 'engine-0', note = 'cell engine-00000 is not alive'): EventOccurrence => ({
  regarding: pod(name),
  type: 'Warning',
  reason: 'CellNotAlive',
  action: 'Reconcile',
  note,
});
const alive = (name = 'engine-0'): EventOccurrence => ({
  regarding: pod(name),
  type: 'Normal',
  reason: 'CellAlive',
  action: 'Reconcile',
  note: 'cell engine-00000 is alive',
});

function recorder(options: { maxPending?: number } = {}) {
  const api = new RecordingEventApi();
  const clock = new FakeClock();
  const dropped: EventDropCause[] = [];
  const emitted: string[] = [];
  const instance = new EventRecorder({
    api,
    reportingController: 'pool-controller',
    reportingInstance: 'pool-controller-0',
    clock,
    wallClock: () => new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + clock.now()),
    onDropped: (cause) => dropped.push(cause),
    onEmitted: (reason) => emitted.push(reason),
    ...options,
  });
  return { api, clock, recorder: instance, dropped, emitted };
}

describe('EventRecorder', () => {
  it('creates an events.k8s.io/v1 Event with every field the API server requires', async () => {
    const { api, recorder: r, emitted } = recorder();
    r.record(notAlive());
    await api.calledTimes(1);
    const [call] = api.calls;
    expect(call).toEqual({
      verb: 'create',
      event: {
        name: expect.stringMatching(/^engine-0\.[0-9a-f]+$/),
        namespace: 'ns',
        eventTime: '2026-01-02T03:04:05.000000Z',
        reportingController: 'pool-controller',
        reportingInstance: 'pool-controller-0',
        action: 'Reconcile',
        reason: 'CellNotAlive',
        regarding: pod('engine-0'),
        note: 'cell engine-00000 is not alive',
        type: 'Warning',
      },
    });
    await until(() => emitted.length > 0, { what: 'the write counted as emitted' });
    expect(emitted).toEqual(['CellNotAlive']);
    r.stop();
  });

  it('turns 100 flaps into two Events whose series counts are written once per interval', async () => {
    const { api, clock, recorder: r } = recorder();
    r.record(notAlive());
    await api.calledTimes(1);
    for (let i = 0; i < 100; i += 1) {
      r.record(alive());
      r.record(notAlive());
    }
    // CellAlive's first write was still queued: it is created with its count so far.
    await api.calledTimes(2);
    const creates = () => api.calls.filter((c) => c.verb === 'create');
    expect(creates().map((c) => [c.event.reason, c.event.series?.count])).toEqual([
      ['CellNotAlive', undefined],
      ['CellAlive', 100],
    ]);
    // CellNotAlive's count waits for its interval: nothing until the clock reaches it.
    await clock.advance(SERIES_UPDATE_INTERVAL_MS - 1);
    expect(api.calls).toHaveLength(2);
    await clock.advance(1);
    await api.calledTimes(3);
    const [patch] = api.calls.filter((c) => c.verb === 'patch');
    expect(patch).toMatchObject({ verb: 'patch', name: creates()[0]!.event.name });
    expect(patch?.verb === 'patch' && patch.series.count).toBe(101);
    await clock.advance(SERIES_UPDATE_INTERVAL_MS);
    expect(api.calls).toHaveLength(3);
    expect(r.pending).toBe(0);
    r.stop();
  });

  it('starts a new Event once a series has not been observed for six minutes', async () => {
    const { api, clock, recorder: r } = recorder();
    r.record(notAlive());
    await api.calledTimes(1);
    await clock.advance(SERIES_FINISH_MS + 1);
    r.record(notAlive());
    await api.calledTimes(2);
    expect(api.calls.map((c) => c.verb)).toEqual(['create', 'create']);
    r.stop();
  });

  it('rate-limits new Events per object, and refills with time', async () => {
    const { api, clock, recorder: r, dropped } = recorder();
    for (let i = 0; i < EVENT_BURST_PER_OBJECT + 5; i += 1) {
      r.record({ ...notAlive(), reason: `Reason${i}` });
    }
    await api.calledTimes(EVENT_BURST_PER_OBJECT);
    expect(dropped).toEqual(Array(5).fill('rate_limited'));
    // Another object has its own budget.
    r.record(notAlive('engine-1'));
    await api.calledTimes(EVENT_BURST_PER_OBJECT + 1);
    await clock.advance(EVENT_REFILL_MS);
    r.record({ ...notAlive(), reason: 'Later' });
    await api.calledTimes(EVENT_BURST_PER_OBJECT + 2);
    expect(dropped).toHaveLength(5);
    r.stop();
  });

  it('bounds the queue while the API server hangs, and counts what it drops', async () => {
    const { api, recorder: r, dropped } = recorder({ maxPending: 3 });
    api.hang = true;
    r.record(notAlive('engine-0'));
    await api.calledTimes(1);
    for (let i = 1; i < 10; i += 1) r.record(notAlive(`engine-${i}`));
    // One write in flight, three waiting; the other six were dropped, not kept.
    expect(r.pending).toBe(3);
    expect(dropped).toEqual(Array(6).fill('queue_full'));
    r.stop();
  });

  it('retries a failed write with backoff, then drops it after the last attempt', async () => {
    const { api, clock, recorder: r, dropped } = recorder();
    api.answer = () =>
      ResourceApiError.refused(eventCall('CREATE'), 500, {
        reason: 'InternalError',
        message: 'down',
      });
    r.record(notAlive());
    for (let attempt = 1; attempt <= MAX_EVENT_WRITE_ATTEMPTS; attempt += 1) {
      await api.calledTimes(attempt);
      if (attempt < MAX_EVENT_WRITE_ATTEMPTS) await clock.advance(1_000 * 2 ** (attempt - 1));
    }
    await clock.advance(60_000);
    expect(api.calls).toHaveLength(MAX_EVENT_WRITE_ATTEMPTS);
    expect(dropped).toEqual(['failed']);
    expect(r.pending).toBe(0);
    r.stop();
  });

  it('creates the Event again when its series update finds it gone', async () => {
    const { api, clock, recorder: r } = recorder();
    r.record(notAlive());
    await api.calledTimes(1);
    api.answer = (call) =>
      call.verb === 'patch'
        ? ResourceApiError.refused(eventCall('PATCH'), 404, { reason: 'NotFound', message: 'gone' })
        : undefined;
    r.record(notAlive());
    await clock.advance(SERIES_UPDATE_INTERVAL_MS);
    await api.calledTimes(3);
    expect(api.calls.map((c) => c.verb)).toEqual(['create', 'patch', 'create']);
    const recreated = api.calls[2] as Extract<Call, { verb: 'create' }>;
    expect(recreated.event.series?.count).toBe(2);
    r.stop();
  });

  it('bounds the note to 1 KiB of UTF-8', async () => {
    const { api, recorder: r } = recorder();
    r.record(notAlive('engine-0', 'é'.repeat(2_000)));
    await api.calledTimes(1);
    const { event } = api.calls[0] as Extract<Call, { verb: 'create' }>;
    expect(Buffer.byteLength(event.note)).toBeLessThanOrEqual(MAX_EVENT_NOTE_BYTES);
    expect(event.note.endsWith('…')).toBe(true);
    r.stop();
  });

  it('writes nothing after stop', async () => {
    const { api, clock, recorder: r } = recorder();
    r.stop();
    r.record(notAlive());
    await clock.advance(SERIES_UPDATE_INTERVAL_MS);
    expect(api.calls).toEqual([]);
  });
});
