import { describe, expect, it } from 'vitest';
import {
  WorkerEventStream,
  WorkerStreamError,
} from '../../src/kubernetes/reflector-worker/main-thread-stream.js';
import { PodStringInterner } from '../../src/kubernetes/reflector-worker/pod-string-interner.js';
import type { MainMessage, WorkerMessage } from '../../src/kubernetes/reflector-worker/protocol.js';
import { parseLabelSelector } from '../../src/kubernetes/resources/label-selector.js';
import type { Pod } from '../../src/model/pod.js';
import { initialReflectorStats, type PodSourceStats } from '../../src/model/pod-source-stats.js';
import type { Logger } from '../../src/runtime/logger.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';
import { type Drain, drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { pod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { until } from '../support/until.js';

/** The main side's end of a port, with the worker's end played by the test. */
class FakePort {
  readonly sent: MainMessage[] = [];
  closed = false;
  #listener: ((message: WorkerMessage) => void) | undefined;
  on(_: 'message', listener: (message: WorkerMessage) => void): this {
    this.#listener = listener;
    return this;
  }
  postMessage(message: MainMessage): void {
    this.sent.push(message);
  }
  close(): void {
    this.closed = true;
  }
  /** The worker posts. */
  deliver(message: WorkerMessage): void {
    this.#listener?.(message);
  }
}

/** What the worker sends: JSON in a buffer. */
const json = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

function stats(fields: Partial<PodSourceStats> = {}): PodSourceStats {
  return { ...initialReflectorStats(), ...fields };
}

function setup(
  options: {
    maxBufferedEvents?: number;
    closeGraceMs?: number;
    logger?: Logger;
    labelSelector?: string;
    /** Leave the stream unread, as a consumer that is behind does (default: a drain reads it). */
    unread?: boolean;
    interner?: PodStringInterner;
  } = {},
) {
  const port = new FakePort();
  const clock = new FakeClock();
  let settleTask: (error?: Error) => void = () => {};
  const task = new Promise<void>((resolve, reject) => {
    settleTask = (error) => (error ? reject(error) : resolve());
  });
  let aborted = 0;
  const seenStats: PodSourceStats[] = [];
  const stream = new WorkerEventStream({
    port,
    task,
    abortTask: () => {
      aborted += 1;
      settleTask(new Error('terminated'));
    },
    maxBufferedEvents: options.maxBufferedEvents ?? 100,
    closeGraceMs: options.closeGraceMs ?? 5_000,
    clock,
    logger: options.logger,
    onStats: (s) => seenStats.push(s),
    labelSelector:
      options.labelSelector === undefined ? undefined : parseLabelSelector(options.labelSelector),
    interner: options.interner,
  });
  const events: Drain<SourceEvent<Pod>> = options.unread
    ? {
        items: [],
        error: undefined,
        done: false,
        finished: new Promise(() => {}),
        close: async () => {},
      }
    : drain({ [Symbol.asyncIterator]: () => stream });
  return {
    port,
    clock,
    stream,
    events,
    seenStats,
    settleTask: (error?: Error) => settleTask(error),
    aborted: () => aborted,
  };
}

/** The keys of a `replace` event, in order; `false` for any other event. */
const replacedKeys = (event: SourceEvent<Pod> | undefined): string[] | false =>
  event?.type === 'replace' && [...event.objects.keys()];

const upsert = (p: Pod) => ({
  type: 'upsert' as const,
  key: `default/${p.metadata.name}`,
  object: p,
});

describe('WorkerEventStream', () => {
  it('drops, counts and logs a watch event for a pod the label selector does not select', async () => {
    const logger = new RecordingLogger();
    const { port, events, seenStats } = setup({ logger, labelSelector: 'app=engine,tier!=test' });
    port.deliver({ kind: 'replace-end', count: 0, stats: stats({ lists: 1 }) });
    const inside = pod({ name: 'in', labels: { app: 'engine' } });
    const stranger = pod({ name: 'stranger', labels: { app: 'other' } });
    const excluded = pod({ name: 'excluded', labels: { app: 'engine', tier: 'test' } });
    port.deliver({
      kind: 'batch',
      events: json([upsert(stranger), upsert(inside), upsert(excluded), upsert(stranger)]),
      stats: stats({ lists: 1, droppedEvents: { 'out-of-scope': 1 } }),
    });
    // A pod relabelled out of the selector comes as a DELETED with its new labels: it goes through.
    const left = { type: 'delete' as const, key: 'default/stranger', object: stranger };
    port.deliver({ kind: 'batch', events: json([left]), stats: stats({ lists: 1 }) });
    await until(() => events.items.length >= 3, { what: 'the events in scope' });
    expect(events.items.slice(1)).toEqual([upsert(inside), left]);
    // The worker's own drops (outside the namespace) and these add up under one reason.
    expect(seenStats.at(-2)?.droppedEvents).toEqual({ 'out-of-scope': 4 });
    expect(seenStats.at(-1)?.droppedEvents).toEqual({ 'out-of-scope': 3 });
    const message = 'reflector dropped a watch event for a pod the label selector does not select';
    expect(logger.mentioning(message, 'warn').map((e) => e.obj)).toEqual([
      { key: 'default/stranger' },
    ]);
    expect(logger.mentioning(message, 'debug')).toHaveLength(2);
  });

  it("passes listed and upserted pods through the source's string interner", async () => {
    const seen: string[] = [];
    const interner = new (class extends PodStringInterner {
      override internPod(p: Pod): Pod {
        seen.push(p.metadata.name);
        return super.internPod(p);
      }
    })();
    const { port, events } = setup({ interner });
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'a' })]), stats: stats() });
    port.deliver({ kind: 'replace-end', count: 1, stats: stats({ lists: 1 }) });
    await until(() => events.items.length >= 1, { what: 'the replace' });
    const b = pod({ name: 'b' });
    port.deliver({ kind: 'batch', events: json([upsert(b)]), stats: stats() });
    await until(() => events.items.length >= 2, { what: 'the upsert' });
    expect(events.items[1]).toEqual(upsert(b));
    expect(seen).toEqual(['a', 'b']);
  });

  it('applies every upsert when no selector is watched', async () => {
    const { port, events, seenStats } = setup({ labelSelector: '' });
    const stranger = pod({ name: 'stranger', labels: { app: 'other' } });
    port.deliver({ kind: 'batch', events: json([upsert(stranger)]), stats: stats() });
    await until(() => events.items.length >= 1, { what: 'the upsert' });
    expect(events.items).toEqual([upsert(stranger)]);
    expect(seenStats.at(-1)?.droppedEvents).toEqual({});
  });

  it('assembles replace chunks into one replace, acknowledging each chunk', async () => {
    const { port, events } = setup();
    port.deliver({
      kind: 'replace-chunk',
      pods: json([pod({ name: 'a' }), pod({ name: 'b' })]),
      stats: stats(),
    });
    await until(() => port.sent.length === 1, { what: 'the first ack' });
    expect(port.sent).toEqual([{ kind: 'ack' }]);
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'c' })]), stats: stats() });
    expect(events.items).toEqual([]);
    port.deliver({ kind: 'replace-end', count: 3, stats: stats({ lists: 1 }) });
    // Exactly one event below: the chunks were not published on their own before the end.
    await until(() => events.items.length > 0, { what: 'the replace to be published' });
    expect(port.sent).toEqual([{ kind: 'ack' }, { kind: 'ack' }]);
    expect(events.items).toHaveLength(1);
    expect(replacedKeys(events.items[0])).toEqual(['default/a', 'default/b', 'default/c']);
  });

  it('decodes chunks that arrive together one per turn of the event loop, in order, acknowledging each', async () => {
    const { port, events } = setup();
    // A ticker that counts the event loop's turns, and the turn each ack was sent in.
    let turn = 0;
    let ticking = true;
    const tick = (): void => {
      turn += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const ackTurns: number[] = [];
    const post = port.postMessage.bind(port);
    port.postMessage = (message: MainMessage) => {
      if (message.kind === 'ack') ackTurns.push(turn);
      post(message);
    };
    // The worker's window lets several chunks, and the end behind them, arrive in one task.
    for (const name of ['a', 'b', 'c']) {
      port.deliver({ kind: 'replace-chunk', pods: json([pod({ name })]), stats: stats() });
    }
    port.deliver({ kind: 'replace-end', count: 3, stats: stats({ lists: 1 }) });
    // Not decoded in the task they arrived in: Node hands on a port's queued messages back to back.
    expect(port.sent).toEqual([]);
    await until(() => events.items.length > 0, { what: 'the replace to be published' });
    ticking = false;
    expect(ackTurns).toHaveLength(3);
    expect(new Set(ackTurns).size).toBe(3);
    expect(replacedKeys(events.items[0])).toEqual(['default/a', 'default/b', 'default/c']);
  });

  it('handles a message that arrived behind an undecoded chunk after that chunk', async () => {
    const { port, events } = setup();
    port.deliver({ kind: 'replace-end', count: 0, stats: stats() });
    await until(() => events.items.length === 1, { what: 'the first replace' });
    // A relist's chunk, its end, and a change the watch heard after it.
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'a' })]), stats: stats() });
    port.deliver({ kind: 'replace-end', count: 1, stats: stats() });
    port.deliver({ kind: 'batch', events: json([upsert(pod({ name: 'b' }))]), stats: stats() });
    await until(() => events.items.length === 3, { what: 'the relist and the change' });
    const [, relist, change] = events.items;
    expect(replacedKeys(relist)).toEqual(['default/a']);
    expect(change).toEqual(upsert(pod({ name: 'b' })));
  });

  it('sends no ack for a chunk once the stream is closing', async () => {
    const { port, stream, settleTask } = setup();
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'a' })]), stats: stats() });
    const closing = stream.return();
    settleTask();
    await closing;
    // The ack's turn has come and gone (it was queued before the close).
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(port.sent).toEqual([{ kind: 'close' }]);
  });

  it('publishes an empty LIST as an empty replace', async () => {
    const { port, events } = setup();
    port.deliver({ kind: 'replace-end', count: 0, stats: stats() });
    await until(() => events.items.length > 0, { what: 'the replace to be published' });
    expect(events.items).toEqual([{ type: 'replace', objects: new Map() }]);
  });

  it('delivers batched events in order and passes the stats on', async () => {
    const { port, events, seenStats } = setup();
    port.deliver({ kind: 'replace-end', count: 0, stats: stats({ lists: 1 }) });
    port.deliver({
      kind: 'batch',
      events: json([upsert(pod({ name: 'a' })), { type: 'delete', key: 'default/b' }]),
      stats: stats({ cursor: '7' }),
    });
    await until(() => events.items.length >= 3, { what: 'the batch to be published' });
    expect(events.items.map((e) => e.type)).toEqual(['replace', 'upsert', 'delete']);
    expect(seenStats.map((s) => s.cursor)).toEqual([undefined, '7']);
  });

  it('drops events still waiting for the consumer when a newer replace supersedes them', async () => {
    const { port, stream } = setup({ unread: true });
    port.deliver({ kind: 'replace-end', count: 0, stats: stats() });
    port.deliver({ kind: 'batch', events: json([upsert(pod({ name: 'a' }))]), stats: stats() });
    expect(stream.buffered).toBe(2);
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'b' })]), stats: stats() });
    port.deliver({ kind: 'replace-end', count: 1, stats: stats() });
    await until(() => stream.buffered === 1, { what: 'the newer replace to supersede the rest' });
    const next = await stream.next();
    expect(replacedKeys(next.value)).toEqual(['default/b']);
  });

  it("counts the pods waiting for the consumer as client-go's FIFO does: each pod of a replace, one per change", async () => {
    const { port, stream } = setup({ unread: true });
    port.deliver({
      kind: 'replace-chunk',
      pods: json([pod({ name: 'a' }), pod({ name: 'b' })]),
      stats: stats(),
    });
    // Still being listed: nothing is queued before the replace is complete.
    expect(stream.queuedItems).toBe(0);
    port.deliver({ kind: 'replace-end', count: 2, stats: stats() });
    port.deliver({
      kind: 'batch',
      events: json([upsert(pod({ name: 'c' })), { type: 'delete', key: 'default/a' }]),
      stats: stats(),
    });
    await until(() => stream.queuedItems === 4, { what: 'the replace and the batch' });
    // A newer replace supersedes everything waiting: only its own pods are queued.
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'd' })]), stats: stats() });
    port.deliver({ kind: 'replace-end', count: 1, stats: stats() });
    await until(() => stream.buffered === 1, { what: 'the newer replace' });
    expect(stream.queuedItems).toBe(1);
    await stream.next();
    expect(stream.queuedItems).toBe(0);
    port.deliver({ kind: 'batch', events: json([upsert(pod({ name: 'e' }))]), stats: stats() });
    expect(stream.queuedItems).toBe(1);
  });

  it("forwards the worker's log entries to the logger", () => {
    const entries: unknown[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (obj, msg) => entries.push([obj, msg]),
      error: () => {},
    };
    const { port } = setup({ logger });
    port.deliver({ kind: 'log', level: 'warn', obj: { resourceVersion: '3' }, msg: 'skipped' });
    expect(entries).toEqual([[{ resourceVersion: '3' }, 'skipped']]);
  });

  it('fails after the buffered events when the worker dies', async () => {
    const { port, events, settleTask } = setup();
    port.deliver({ kind: 'replace-end', count: 0, stats: stats() });
    settleTask(new Error('worker exited with code: 1'));
    await until(() => events.done, { what: 'the stream to fail' });
    expect(events.items).toHaveLength(1);
    expect(events.error).toBeInstanceOf(WorkerStreamError);
    expect((events.error as Error).message).toBe(
      'the reflector worker failed: worker exited with code: 1',
    );
  });

  it('fails when the worker ends the stream without being asked', async () => {
    const { events, settleTask } = setup();
    settleTask();
    await until(() => events.done, { what: 'the stream to fail' });
    expect((events.error as Error).message).toBe(
      'the reflector worker ended its stream unexpectedly',
    );
  });

  it('fails, drops its backlog and asks the worker to close when the consumer falls too far behind', async () => {
    const { port, stream } = setup({ maxBufferedEvents: 3 });
    port.deliver({
      kind: 'batch',
      events: json([1, 2, 3].map((i) => upsert(pod({ name: `p${i}` })))),
      stats: stats(),
    });
    expect(stream.buffered).toBe(3);
    port.deliver({ kind: 'batch', events: json([upsert(pod({ name: 'p4' }))]), stats: stats() });
    expect(stream.buffered).toBe(0);
    expect(port.sent).toEqual([{ kind: 'close' }]);
    await expect(stream.next()).rejects.toThrow('fell more than 3 events behind');
  });

  it('closes by asking the worker, and waits for its task to end', async () => {
    const { port, clock, events, settleTask, aborted } = setup();
    const closing = events.close();
    await until(() => events.done, { what: 'the pending next() to finish' });
    expect(port.sent).toEqual([{ kind: 'close' }]);
    expect(clock.pendingTimers).toBe(1); // the close grace still runs: nothing waited for it
    settleTask();
    await closing;
    expect(port.closed).toBe(true);
    expect(aborted()).toBe(0);
    expect(events.error).toBeUndefined();
  });

  it('terminates the worker when it does not close within the grace period', async () => {
    const { clock, events, port, aborted } = setup({ closeGraceMs: 1_000 });
    const closing = events.close();
    await clock.advance(999);
    expect(aborted()).toBe(0);
    await clock.advance(1);
    await closing;
    expect(aborted()).toBe(1);
    expect(port.closed).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('ignores what arrives after it was closed', async () => {
    const { port, stream, settleTask } = setup();
    const closing = stream.return();
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'a' })]), stats: stats() });
    settleTask();
    await closing;
    expect(port.sent).toEqual([{ kind: 'close' }]);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });
});

describe('WorkerEventStream: a LIST streamed page by page stays all or nothing', () => {
  const names = (event: SourceEvent<Pod> | undefined): string[] =>
    event?.type === 'replace' ? [...event.objects.keys()].sort() : [];

  it('drops what an earlier LIST sent when a chunk says the LIST restarted', async () => {
    const { port, events } = setup();
    port.deliver({
      kind: 'replace-chunk',
      pods: json([pod({ name: 'a' }), pod({ name: 'b' })]),
      stats: stats(),
    });
    // The LIST failed after its first page; the retry's first chunk restarts.
    port.deliver({
      kind: 'replace-chunk',
      pods: json([pod({ name: 'c' })]),
      stats: stats(),
      restart: true,
    });
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'd' })]), stats: stats() });
    expect(events.items).toEqual([]);
    port.deliver({ kind: 'replace-end', count: 2, stats: stats({ lists: 1 }) });
    await until(() => events.items.length > 0, { what: 'the replace to be published' });
    expect(events.items).toHaveLength(1);
    expect(names(events.items[0])).toEqual(['default/c', 'default/d']);
  });

  it('publishes an empty replace when the replace-end itself says the LIST restarted', async () => {
    const { port, events } = setup();
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'a' })]), stats: stats() });
    port.deliver({ kind: 'replace-end', count: 0, stats: stats({ lists: 1 }), restart: true });
    await until(() => events.items.length > 0, { what: 'the replace to be published' });
    expect(events.items).toHaveLength(1);
    expect(names(events.items[0])).toEqual([]);
  });

  it('fails the stream, publishing nothing, when the pods assembled are not the count announced', async () => {
    const { port, events } = setup();
    port.deliver({ kind: 'replace-chunk', pods: json([pod({ name: 'a' })]), stats: stats() });
    port.deliver({ kind: 'replace-end', count: 2, stats: stats({ lists: 1 }) });
    await until(() => events.done, { what: 'the stream to fail' });
    expect(events.items).toEqual([]);
    expect(String(events.error)).toMatch(/announced a replace of 2 pods but sent 1/);
    expect(port.sent).toContainEqual({ kind: 'close' });
  });
});
