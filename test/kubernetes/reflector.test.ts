import { describe, expect, it } from 'vitest';
import {
  ApiConnectionError,
  ApiStatusError,
  MalformedListError,
} from '../../src/kubernetes/client/api-errors.js';
import {
  KubernetesReflector,
  type KubernetesReflectorOptions,
} from '../../src/kubernetes/reflector/reflector.js';
import type { Pod } from '../../src/model/pod.js';
import type { Logger } from '../../src/runtime/logger.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';
import { decodedEvents } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodApi } from '../support/fake-pod-api.js';
import { pod, rawPod } from '../support/pods.js';
import { reflectorAtRest } from '../support/reflector-at-rest.js';

const IDLE_MS = 300_000;

interface Line {
  level: string;
  obj: unknown;
  msg: string | undefined;
}

function lineLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (obj?: unknown, msg?: string): void => {
      lines.push({ level, obj, msg });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** The reflector `setup` made last: the one `atRest` watches. */
let newest: { api: FakePodApi; reflector: KubernetesReflector } | undefined;

/** Waits until the newest reflector did all it can without the clock or the test. */
function atRest(): Promise<void> {
  if (!newest) throw new Error('atRest: no reflector was set up');
  return reflectorAtRest(newest);
}

function setup(options: Partial<KubernetesReflectorOptions> = {}) {
  const clock = new FakeClock();
  const api = new FakePodApi(clock);
  const logger = lineLogger();
  const reflector = new KubernetesReflector({
    api,
    clock,
    // No jitter, and the shortest watch timeout: every wait in these tests is exact.
    random: () => 0,
    wallClock: () => 1_700_000_000_000,
    logger,
    ...options,
  });
  newest = { api, reflector };
  return { clock, api, reflector, logger };
}

function status(code: number, extra: Record<string, unknown> = {}) {
  return new ApiStatusError('WATCH', { code, causes: [], ...extra });
}

function errorFrame(object: Record<string, unknown>) {
  return {
    type: 'ERROR',
    object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', ...object },
  };
}

function keys(event: SourceEvent<Pod> | undefined): string[] {
  if (event?.type !== 'replace') throw new Error(`expected a replace, got ${event?.type}`);
  return [...event.objects.keys()].sort();
}

/** Starts a stream whose first LIST returns `pods` at `resourceVersion` and which is now watching. */
async function watching(
  options: Partial<KubernetesReflectorOptions> = {},
  resourceVersion = '10',
  pods: Pod[] = [pod({ name: 'a' })],
) {
  const harness = setup(options);
  harness.api.queueList({ pods, resourceVersion });
  const stream = drain(decodedEvents(harness.reflector.watch()));
  await atRest();
  return { ...harness, stream };
}

describe('KubernetesReflector: listing and watching', () => {
  it('opens with a LIST published as one replace, then watches from the list version', async () => {
    const { api, stream } = await watching({}, '10', [pod({ name: 'a' }), pod({ name: 'b' })]);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    expect(stream.items).toHaveLength(1);
    expect(keys(stream.items[0])).toEqual(['default/a', 'default/b']);
    await stream.close();
  });

  it('scopes both LIST and WATCH by namespace and label selector, and pages the LIST', async () => {
    const { api, stream } = await watching({
      namespace: 'pools',
      labelSelector: 'app=engine',
      listPageSize: 250,
    });
    expect(
      api.requests.map(({ verb, namespace, labelSelector }) => ({
        verb,
        namespace,
        labelSelector,
      })),
    ).toEqual([
      { verb: 'LIST', namespace: 'pools', labelSelector: 'app=engine' },
      { verb: 'WATCH', namespace: 'pools', labelSelector: 'app=engine' },
    ]);
    expect(api.requests[0]?.limit).toBe(250);
    await stream.close();
  });

  it('publishes ADDED and MODIFIED as upserts and DELETED as a delete carrying the tombstone', async () => {
    const { api, stream } = await watching();
    api.watch
      .push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) })
      .push({
        type: 'MODIFIED',
        object: rawPod({ name: 'b', resourceVersion: '12', phase: 'Failed' }),
      })
      .push({ type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '13' }) });
    await atRest();
    expect(stream.items.slice(1)).toEqual([
      { type: 'upsert', key: 'default/b', object: pod({ name: 'b', resourceVersion: '11' }) },
      {
        type: 'upsert',
        key: 'default/b',
        object: pod({ name: 'b', resourceVersion: '12', phase: 'Failed' }),
      },
      { type: 'delete', key: 'default/a', lastObject: pod({ name: 'a', resourceVersion: '13' }) },
    ]);
    await stream.close();
  });

  it('moves the cursor to each frame version in event order, ordered by length before digits', async () => {
    const { api, clock, reflector, stream } = await watching({}, '9');
    await clock.advance(1_000); // a watch that lasted a second: its clean end reconnects at once
    api.watch
      .push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '12' }) })
      .push({ type: 'MODIFIED', object: rawPod({ name: 'b', resourceVersion: '15' }) });
    await atRest();
    expect(reflector.stats().cursor).toBe('15');
    expect(stream.items).toHaveLength(3);
    api.watch.end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=9', 'WATCH rv=15']);
    await stream.close();
  });

  it('keeps the cursor when a valid frame carries no resourceVersion, and still publishes it', async () => {
    const { api, clock, stream } = await watching();
    await clock.advance(1_000);
    const versionless = rawPod({ name: 'b' });
    delete (versionless.metadata as Record<string, unknown>).resourceVersion;
    api.watch.push({ type: 'ADDED', object: versionless }).end();
    await atRest();
    expect(stream.items[1]).toMatchObject({ type: 'upsert', key: 'default/b' });
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10']);
    await stream.close();
  });

  it('advances the cursor on a bookmark and publishes nothing', async () => {
    const { api, clock, stream } = await watching();
    await clock.advance(1_000);
    api.watch
      .push({ type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: '42' } } })
      .end();
    await atRest();
    expect(stream.items).toHaveLength(1);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=42']);
    await stream.close();
  });

  it('keeps the cursor on a bookmark without a version', async () => {
    const { api, clock, stream } = await watching();
    await clock.advance(1_000);
    api.watch.push({ type: 'BOOKMARK', object: { metadata: {} } }).end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10']);
    await stream.close();
  });

  it('ignores frames of unknown type but still advances past their version', async () => {
    const { api, clock, reflector, stream } = await watching();
    await clock.advance(1_000);
    api.watch.push({ type: 'SURPRISE', object: { metadata: { resourceVersion: '33' } } }).end();
    await atRest();
    expect(stream.items).toHaveLength(1);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=33']);
    expect(reflector.stats().events.OTHER).toBe(1);
    await stream.close();
  });

  it('reconnects from the cursor after a clean end, at once and without relisting', async () => {
    const { api, clock, reflector, stream } = await watching();
    await clock.advance(1_000);
    api.watch.push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) }).end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=11']);
    expect(api.requests.map((r) => r.at)).toEqual([0, 0, 1_000]);
    // The new watch's idle, stall and health timers, and the grace after the old one ended (it
    // ends when the new watch proves itself): the old watch's own timers were released with it.
    expect(clock.pendingTimers).toBe(4);
    await clock.advance(1_000);
    expect(clock.pendingTimers).toBe(2);
    expect(reflector.stats().lists).toBe(1);
    expect(reflector.stats().relists).toEqual({});
    expect(reflector.stats().lastError).toBeUndefined();
    await stream.close();
  });

  it('sends a timeoutSeconds drawn from the injected random in [300, 600) on every WATCH', async () => {
    const draws = [0, 0.5, 0.999_999];
    const { api, clock, stream } = await watching({ random: () => draws.shift() ?? 0 });
    await clock.advance(1_000);
    api.watch.end();
    await atRest();
    await clock.advance(1_000);
    api.watch.end();
    await atRest();
    expect(api.requests.filter((r) => r.verb === 'WATCH').map((r) => r.timeoutSeconds)).toEqual([
      300, 450, 599,
    ]);
    await stream.close();
  });

  it('uses a fixed watchTimeoutSeconds when one is given', async () => {
    const { api, stream } = await watching({ watchTimeoutSeconds: 5 });
    expect(api.watch.options.timeoutSeconds).toBe(5);
    await stream.close();
  });

  it('opens an independent stream, starting with a LIST, on every watch() call', async () => {
    const { api, reflector, stream } = await watching();
    api.queueList({ pods: [pod({ name: 'z' })], resourceVersion: '99' });
    const second = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=99']);
    expect(keys(second.items[0])).toEqual(['default/z']);
    await Promise.all([stream.close(), second.close()]);
  });
});

describe('KubernetesReflector: a dead cursor relists', () => {
  it('relists after a 410 Gone answer to WATCH, after the backoff, with the cursor cleared', async () => {
    const harness = setup();
    const { api, clock, reflector } = harness;
    api.queueList({ pods: [pod({ name: 'a' })], resourceVersion: '10' });
    api.queueWatch(status(410, { reason: 'Expired' }));
    api.world = { pods: [pod({ name: 'b' })], resourceVersion: '50' };
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    expect(reflector.stats()).toMatchObject({ phase: 'backoff', relists: { expired: 1 } });
    expect(reflector.stats().cursor).toBeUndefined();
    await clock.advance(799);
    expect(api.log).toHaveLength(2);
    await clock.advance(1);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=50']);
    expect(keys(stream.items[1])).toEqual(['default/b']);
    await stream.close();
  });

  it.each([
    ['code 410', { code: 410, reason: 'Expired' }, 'expired'],
    ['reason Expired without a code', { reason: 'Expired' }, 'expired'],
    ['reason Gone', { code: 410, reason: 'Gone' }, 'expired'],
    ['code 504', { code: 504, reason: 'Timeout' }, 'too-large'],
    [
      'a ResourceVersionTooLarge cause',
      { code: 500, details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } },
      'too-large',
    ],
  ])(
    'relists after an in-stream ERROR frame with %s, discarding the rest of the stream',
    async (_, object, reason) => {
      const { api, clock, reflector, stream } = await watching();
      api.world = { pods: [pod({ name: 'fresh' })], resourceVersion: '70' };
      api.watch
        .push(errorFrame(object))
        .push({ type: 'ADDED', object: rawPod({ name: 'late', resourceVersion: '12' }) });
      await atRest();
      expect(api.watches[0]?.released).toBe(true);
      expect(reflector.stats().relists).toEqual({ [reason]: 1 });
      await clock.advance(800);
      expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=70']);
      expect(stream.items.map((e) => e.type)).toEqual(['replace', 'replace']);
      await stream.close();
    },
  );

  it('relists after a 504 answer to WATCH', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(504));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=1']);
    expect(reflector.stats().relists).toEqual({ 'too-large': 1 });
    await stream.close();
  });

  it('keeps the cursor empty after a failed LIST, so the next attempt lists again', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(new ApiConnectionError('LIST', new Error('ECONNREFUSED')), {
      pods: [],
      resourceVersion: '5',
    });
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(api.log).toEqual(['LIST']);
    expect(reflector.stats()).toMatchObject({ phase: 'backoff', lastError: 'LIST: ECONNREFUSED' });
    expect(reflector.stats().cursor).toBeUndefined();
    expect(stream.items).toEqual([]);
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'LIST', 'WATCH rv=5']);
    await stream.close();
  });

  it('counts only completed LISTs, and no relist for retries of a failed first LIST', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(new ApiConnectionError('LIST', new Error('ECONNREFUSED')), {
      pods: [],
      resourceVersion: '5',
    });
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(reflector.stats()).toMatchObject({ lists: 0, relists: {} });
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'LIST', 'WATCH rv=5']);
    expect(reflector.stats()).toMatchObject({ lists: 1, relists: {} });
    await stream.close();
  });

  it('counts a failed LIST after a completed one as a list-failed relist', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(
      { pods: [], resourceVersion: '5' },
      new ApiConnectionError('LIST', new Error('ECONNREFUSED')),
      { pods: [], resourceVersion: '9' },
    );
    api.queueWatch(status(410, { reason: 'Expired' }));
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    await clock.advance(60_000);
    expect(api.log.slice(0, 4)).toEqual(['LIST', 'WATCH rv=5', 'LIST', 'LIST']);
    expect(reflector.stats().relists).toMatchObject({ expired: 1, 'list-failed': 1 });
    expect(reflector.stats().lists).toBe(2);
    await stream.close();
  });

  it('publishes nothing from a LIST with an unreadable item, and lists again', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(new MalformedListError('LIST item default/x: malformed pod: metadata.uid'));
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(stream.items).toEqual([]);
    expect(reflector.stats().lastError).toContain('default/x');
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'LIST', 'WATCH rv=1']);
    await stream.close();
  });
});

describe('KubernetesReflector: a watch the server ends at once', () => {
  it('is a failure: reconnects from the cursor after a growing backoff, not at once forever', async () => {
    const { api, clock, reflector, stream } = await watching();
    for (let i = 0; i < 4; i += 1) {
      await clock.advance(10);
      api.watch.end();
      await atRest();
      // Not reopened at once.
      expect(api.requests.filter((r) => r.verb === 'WATCH')).toHaveLength(i + 1);
      await clock.advance(800 * 2 ** i);
    }
    expect(api.log).toEqual(['LIST', ...Array(5).fill('WATCH rv=10')]);
    expect(api.requests.filter((r) => r.verb === 'WATCH').map((r) => r.at)).toEqual([
      0, 810, 2_420, 5_630, 12_040,
    ]);
    expect(reflector.stats().lastError).toBe(
      'watch ended by the server after 10 ms without a single frame',
    );
    expect(reflector.stats().relists).toEqual({});
    await stream.close();
  });

  it('is a failure even when it delivered a frame: reconnects after the backoff, not at once', async () => {
    const { api, clock, stream } = await watching();
    api.watch.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } }).end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    // The bookmark proved the watch (the streak starts over), so the wait is the first one.
    await clock.advance(799);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    await clock.advance(1);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=12']);
    await stream.close();
  });

  it('is not a failure when it lasted a second', async () => {
    const { api, clock, stream } = await watching();
    await clock.advance(999);
    api.watch.end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    await clock.advance(800);
    await clock.advance(1_000);
    api.watch.end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10', 'WATCH rv=10']);
    await stream.close();
  });
});

describe('KubernetesReflector: other failures reconnect from the same cursor', () => {
  it('leaves the cursor and relists after the backoff on an ERROR frame 500, as client-go does', async () => {
    const { api, clock, reflector, stream } = await watching();
    api.watch
      .push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) })
      .push(errorFrame({ code: 500, reason: 'InternalError', message: 'etcd hiccup' }));
    await atRest();
    expect(reflector.stats().lastError).toBe('ERROR frame 500 InternalError: etcd hiccup');
    expect(reflector.stats().cursor).toBeUndefined();
    await clock.advance(799);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    await clock.advance(1);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=1']);
    expect(reflector.stats()).toMatchObject({ lists: 2, relists: { 'error-frame': 1 } });
    await stream.close();
  });

  it('does not meet the same failing ERROR frame from the same cursor again and again', async () => {
    const { api, clock, stream } = await watching();
    for (let i = 0; i < 3; i += 1) {
      api.watch.push(errorFrame({ code: 500, reason: 'InternalError' }));
      await clock.advance(800 * 2 ** i);
    }
    // Each failure led to a LIST, with the backoff growing between them.
    expect(api.log).toEqual([
      'LIST',
      'WATCH rv=10',
      'LIST',
      'WATCH rv=1',
      'LIST',
      'WATCH rv=1',
      'LIST',
      'WATCH rv=1',
    ]);
    expect(api.requests.filter((r) => r.verb === 'LIST').map((r) => r.at)).toEqual([
      0, 800, 2_400, 5_600,
    ]);
    await stream.close();
  });

  it('resumes from the cursor after an ERROR frame 429, after the backoff', async () => {
    const { api, clock, stream } = await watching();
    api.watch
      .push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) })
      .push(errorFrame({ code: 429, reason: 'TooManyRequests' }));
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=11']);
    await stream.close();
  });

  it('reconnects after a dropped connection', async () => {
    const { api, clock, stream } = await watching();
    api.watch.fail(new ApiConnectionError('WATCH', new Error('socket hang up')));
    await atRest();
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10']);
    await stream.close();
  });

  it('reconnects after a WATCH that fails to open', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(new ApiConnectionError('WATCH', new Error('ECONNRESET')), status(500));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(800);
    await clock.advance(1_600);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10', 'WATCH rv=10']);
    expect(reflector.stats().relists).toEqual({});
    await stream.close();
  });

  it('honours Retry-After on a 429 answer to WATCH', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(429, { reason: 'TooManyRequests', retryAfterMs: 7_000 }));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(6_999);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    await clock.advance(1);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10']);
    expect(reflector.stats().lists).toBe(1);
    await stream.close();
  });

  it('honours Retry-After on a 429 answer to LIST', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(new ApiStatusError('LIST', { code: 429, causes: [], retryAfterMs: 3_000 }));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(2_999);
    expect(api.log).toEqual(['LIST']);
    await clock.advance(1);
    expect(api.log).toEqual(['LIST', 'LIST', 'WATCH rv=1']);
    await stream.close();
  });

  it('waits the backoff, not a shorter Retry-After', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(500), status(500), status(429, { retryAfterMs: 1_000 }));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(800 + 1_600);
    expect(api.requests.at(-1)?.at).toBe(2_400);
    await clock.advance(3_199);
    expect(api.log).toHaveLength(4);
    await clock.advance(1);
    expect(api.log).toHaveLength(5);
    await stream.close();
  });
});

describe('KubernetesReflector: unreadable frames', () => {
  it('skips a pod frame that does not validate but carries a version, logs it, and advances past it', async () => {
    const { api, clock, logger, reflector, stream } = await watching();
    await clock.advance(1_000);
    const broken = rawPod({ name: 'broken', resourceVersion: '11' });
    delete (broken.metadata as Record<string, unknown>).uid;
    api.watch
      .push({ type: 'ADDED', object: broken })
      .push({ type: 'ADDED', object: rawPod({ name: 'fine', resourceVersion: '12' }) });
    await atRest();
    expect(stream.items.slice(1).map((e) => (e.type === 'upsert' ? e.key : e.type))).toEqual([
      'default/fine',
    ]);
    expect(logger.lines.filter((l) => l.level === 'warn').map((l) => l.obj)).toEqual([
      expect.objectContaining({
        resourceVersion: '11',
        error: expect.stringContaining('metadata.uid'),
      }),
    ]);
    expect(reflector.stats().relists).toEqual({});
    api.watch.end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=12']);
    await stream.close();
  });

  it('advances past a skipped frame even when it is the last one before the end', async () => {
    const { api, clock, stream } = await watching();
    await clock.advance(1_000);
    api.watch
      .push({ type: 'MODIFIED', object: { metadata: { name: 7, resourceVersion: '19' } } })
      .end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=19']);
    await stream.close();
  });

  it('relists after a pod frame that does not validate and has no version', async () => {
    const { api, clock, reflector, stream } = await watching();
    api.watch.push({ type: 'ADDED', object: { metadata: { name: 'x' } } });
    await atRest();
    expect(reflector.stats().relists).toEqual({ 'malformed-frame': 1 });
    expect(api.watches[0]?.released).toBe(true);
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=1']);
    await stream.close();
  });

  it.each([
    ['an array', [1, 2]],
    ['a string', 'ADDED'],
    ['null', null],
    ['a number', 42],
  ])('relists after a frame that is %s, not an object', async (_, value) => {
    const { api, clock, reflector, stream } = await watching();
    api.watch.push(value);
    await atRest();
    expect(reflector.stats().relists).toEqual({ 'malformed-frame': 1 });
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=1']);
    await stream.close();
  });

  it('relists after a line that is not JSON', async () => {
    const { api, clock, reflector, stream } = await watching();
    api.watch.pushGarbled();
    await atRest();
    expect(reflector.stats().lastError).toContain('not JSON');
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=1']);
    await stream.close();
  });
});

describe('KubernetesReflector: idle connections', () => {
  it('tears down a watch that sends no bytes for the idle limit and resumes from the cursor', async () => {
    const { api, clock, reflector, stream } = await watching();
    await clock.advance(IDLE_MS - 1);
    expect(api.watch.released).toBe(false);
    await clock.advance(1);
    expect(api.watches[0]?.released).toBe(true);
    expect(reflector.stats().lastError).toBe(`no bytes from the API server for ${IDLE_MS} ms`);
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10']);
    expect(reflector.stats().lists).toBe(1);
    await stream.close();
  });

  it('counts any bytes as life, even those of an unfinished frame', async () => {
    // Against the idle limit; whole frames have a deadline of their own (reflector-deadlines).
    const { api, clock, stream } = await watching({ stallTimeoutMs: 10 * IDLE_MS });
    await clock.advance(IDLE_MS - 1_000);
    api.watch.trickle(10);
    await clock.advance(IDLE_MS - 1_000);
    api.watch.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '11' } } });
    await clock.advance(IDLE_MS - 1_000);
    expect(api.watch.released).toBe(false);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10']);
    await stream.close();
  });

  it('tears down a WATCH request that gets no answer within the idle limit', async () => {
    const { api, clock, reflector } = setup({ idleTimeoutMs: 10_000 });
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch('hang');
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(10_000);
    expect(api.watches[0]?.released).toBe(true);
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'WATCH rv=10']);
    await stream.close();
  });

  it('gives up on a LIST that gets no bytes within the idle limit and lists again', async () => {
    const { api, clock, reflector } = setup({ idleTimeoutMs: 10_000 });
    api.queueList('hang');
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(10_000);
    expect(api.lists[0]?.aborted).toBe(true);
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'LIST', 'WATCH rv=1']);
    await stream.close();
  });
});

describe('KubernetesReflector: backoff', () => {
  it('backs off from 800 ms doubling to 30 s, and never gives up', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    const failures = 12;
    api.queueWatch(...Array.from({ length: failures }, () => status(503)));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(400_000);
    const times = api.requests.filter((r) => r.verb === 'WATCH').map((r) => r.at);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    expect(gaps).toEqual([
      800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000, 30_000, 30_000, 30_000,
    ]);
    expect(api.log.at(-1)).toBe('WATCH rv=10');
    expect(reflector.stats().phase).toBe('watching');
    await stream.close();
  });

  it('jitters each wait into [base, 2 × base), capped at 30 s', async () => {
    const { api, clock, reflector } = setup({ random: () => 0.5 });
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(503), status(503));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(10_000);
    const times = api.requests.filter((r) => r.verb === 'WATCH').map((r) => r.at);
    expect(times).toEqual([0, 1_200, 1_200 + 2_400]);
    await stream.close();
  });

  it('starts the backoff over once a WATCH stayed open a second', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(503), status(503), status(503));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(800 + 1_600 + 3_200);
    expect(api.log).toHaveLength(5);
    await clock.advance(1_000); // the fourth WATCH proves itself by staying open
    api.watch.fail();
    await atRest();
    const droppedAt = clock.now();
    await clock.advance(800);
    expect(api.requests.at(-1)?.at).toBe(droppedAt + 800);
    await stream.close();
  });

  it('starts the backoff over once a WATCH delivered a change or a bookmark', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(503), status(503));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(800 + 1_600);
    api.watch.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '11' } } }).fail();
    await atRest();
    const droppedAt = clock.now();
    await clock.advance(800);
    expect(api.requests.at(-1)).toMatchObject({ at: droppedAt + 800 });
    expect(api.log.at(-1)).toBe('WATCH rv=11');
    await stream.close();
  });

  it('keeps growing the backoff while WATCHes fail before proving themselves', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    // Each WATCH is accepted, then answered with an ERROR frame at once: no proof.
    for (const wait of [0, 800, 1_600, 3_200]) {
      await clock.advance(wait);
      api.watch.push(errorFrame({ code: 429, reason: 'TooManyRequests' }));
      await atRest();
    }
    const times = api.requests.filter((r) => r.verb === 'WATCH').map((r) => r.at);
    expect(times).toEqual([0, 800, 2_400, 5_600]);
    await clock.advance(6_399);
    expect(api.requests.filter((r) => r.verb === 'WATCH')).toHaveLength(4);
    await clock.advance(1);
    expect(api.requests.filter((r) => r.verb === 'WATCH')).toHaveLength(5);
    await stream.close();
  });

  it('does not let clean reconnects break a healthy streak', async () => {
    const { api, clock, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    api.queueWatch(status(503), status(503));
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advance(800 + 1_600);
    await clock.advance(70_000);
    api.watch.end();
    await clock.advance(70_000);
    api.watch.fail();
    await atRest();
    const droppedAt = clock.now();
    await clock.advance(800);
    expect(api.requests.at(-1)?.at).toBe(droppedAt + 800);
    await stream.close();
  });
});

describe('KubernetesReflector: closing', () => {
  it('closes the watch when the consumer closes the stream, even with no frame pending', async () => {
    const { api, clock, reflector, stream } = await watching();
    await stream.close();
    expect(api.watches[0]?.released).toBe(true);
    expect(stream.done).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    expect(reflector.stats()).toMatchObject({ phase: 'stopped', healthy: false });
  });

  it('closes the watch when the consumer stops iterating after an event', async () => {
    const { api, reflector } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    const seen: string[] = [];
    const consumer = (async () => {
      for await (const event of decodedEvents(reflector.watch())) {
        seen.push(event.type);
        if (event.type === 'upsert') break;
      }
    })();
    await atRest();
    api.watch.push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) });
    await consumer;
    expect(seen).toEqual(['replace', 'upsert']);
    expect(api.watch.released).toBe(true);
  });

  it('aborts an in-flight LIST when the stream is closed', async () => {
    const { api, clock, reflector } = setup();
    api.queueList('hang');
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    await stream.close();
    expect(api.lists[0]?.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('stops waiting out a backoff when the stream is closed', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(new Error('boom'));
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(clock.pendingTimers).toBe(1);
    await stream.close();
    expect(clock.pendingTimers).toBe(0);
    expect(api.log).toEqual(['LIST']);
  });

  it('closes every watch it opened, whichever way each one ended', async () => {
    const { api, clock, reflector } = setup({ idleTimeoutMs: 5_000 });
    api.queueList({ pods: [], resourceVersion: '10' });
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    await clock.advance(1_000);
    api.watch.end(); // clean end
    await atRest();
    api.watch.fail(); // dropped
    await clock.advance(800);
    api.watch.push(errorFrame({ code: 500 })); // other ERROR
    await clock.advance(1_600);
    api.watch.push(errorFrame({ code: 410 })); // expired
    await clock.advance(3_200);
    api.watch.push({ type: 'ADDED', object: {} }); // malformed without a version
    await clock.advance(6_400);
    await clock.advance(5_000); // idle, after it proved itself: the backoff started over
    await clock.advance(800);
    expect(api.watches).toHaveLength(7);
    await stream.close(); // consumer closes mid-watch
    expect(api.watches.every((w) => w.released)).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('KubernetesReflector: when the watch is healthy', () => {
  it('is not healthy when the WATCH is merely accepted, but once it stayed open a second', async () => {
    const { clock, reflector, stream } = await watching();
    expect(reflector.stats()).toMatchObject({ phase: 'watching', healthy: false });
    await clock.advance(999);
    expect(reflector.stats().healthy).toBe(false);
    await clock.advance(1);
    expect(reflector.stats().healthy).toBe(true);
    await stream.close();
  });

  it('is healthy as soon as the watch delivers a frame, a bookmark included', async () => {
    const { api, reflector, stream } = await watching();
    api.watch.push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '11' } } });
    await atRest();
    expect(reflector.stats().healthy).toBe(true);
    await stream.close();
  });

  it('never turns healthy for watches the server ends at once', async () => {
    let everHealthy = false;
    const holder: { reflector?: KubernetesReflector } = {};
    const { api, clock, reflector, stream } = await watching({
      onStatsChange: () => {
        everHealthy ||= holder.reflector?.stats().healthy ?? false;
      },
    });
    holder.reflector = reflector;
    for (let i = 0; i < 3; i += 1) {
      await clock.advance(500);
      api.watch.end();
      await atRest();
      await clock.advance(800 * 2 ** i);
    }
    expect(api.watches.length).toBe(4);
    expect(everHealthy).toBe(false);
    await stream.close();
  });
});

describe('KubernetesReflector: health through failures', () => {
  /** Watching with a proven watch, recording every change of `healthy` with its clock time. */
  async function established() {
    const holder: { reflector?: KubernetesReflector; clock?: FakeClock } = {};
    const changes: Array<[number, boolean]> = [];
    const harness = await watching({
      onStatsChange: () => {
        const healthy = holder.reflector?.stats().healthy;
        if (healthy === undefined || !holder.clock) return;
        if (changes.at(-1)?.[1] !== healthy) changes.push([holder.clock.now(), healthy]);
      },
    });
    holder.reflector = harness.reflector;
    holder.clock = harness.clock;
    await harness.clock.advance(1_000);
    expect(harness.reflector.stats().healthy).toBe(true);
    return { ...harness, changes };
  }

  it('stays healthy through a relist that makes progress', async () => {
    const { api, clock, reflector, stream, changes } = await established();
    // An ERROR frame 500 relists after the backoff (a 410 on a proven cursor would not wait).
    api.watch.push(errorFrame({ code: 500 }));
    await atRest();
    expect(reflector.stats()).toMatchObject({ phase: 'backoff', healthy: true });
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=1']);
    await clock.advance(60_000);
    expect(changes).toEqual([[1_000, true]]);
    await stream.close();
  });

  it('stays healthy through a clean reconnect after a long quiet watch', async () => {
    const { api, clock, stream, changes } = await established();
    await clock.advance(290_000);
    api.watch.end();
    await atRest();
    await clock.advance(60_000);
    expect(changes).toEqual([[1_000, true]]);
    await stream.close();
  });

  it('turns unhealthy once failing for 30 s without progress, and healthy again on recovery', async () => {
    const { api, clock, reflector, stream, changes } = await established();
    api.queueWatch(...Array.from({ length: 5 }, () => status(503)));
    api.watch.fail(new ApiConnectionError('WATCH', new Error('socket hang up')));
    await atRest();
    const failedAt = clock.now();
    await clock.advance(29_999);
    expect(reflector.stats().healthy).toBe(true);
    await clock.advance(1);
    expect(reflector.stats()).toMatchObject({ healthy: false, phase: 'backoff' });
    // The backoff runs on (800, 1.6 s, 3.2 s, 6.4 s, 12.8 s, then a watch opens) and proves itself.
    await clock.advance(30_000);
    expect(reflector.stats().healthy).toBe(true);
    expect(changes.slice(1, 2)).toEqual([[failedAt + 30_000, false]]);
    expect(changes.at(-1)?.[1]).toBe(true);
    await stream.close();
  });

  it('turns unhealthy when a relist hangs for 30 s', async () => {
    const { api, clock, reflector, stream } = await established();
    api.queueList('hang');
    api.watch.push(errorFrame({ code: 410 }));
    await atRest();
    const failedAt = clock.now();
    await clock.advance(800 + 29_000);
    expect(reflector.stats()).toMatchObject({ phase: 'listing', healthy: true });
    await clock.advance(failedAt + 30_000 - clock.now());
    expect(reflector.stats()).toMatchObject({ phase: 'listing', healthy: false });
    await stream.close();
  });

  it('is never healthy before the first watch proved itself, however long the wait', async () => {
    const { api, clock, reflector } = setup();
    api.queueList(new ApiConnectionError('LIST', new Error('refused')), {
      pods: [],
      resourceVersion: '5',
    });
    api.queueWatch(status(503));
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(reflector.stats().healthy).toBe(false);
    await clock.advance(800);
    // Listed, but the WATCH failed to open: no steady state yet, so no grace either.
    expect(reflector.stats()).toMatchObject({ lists: 1, healthy: false });
    await clock.advance(1_600);
    expect(reflector.stats()).toMatchObject({ phase: 'watching', healthy: false });
    await clock.advance(1_000);
    expect(reflector.stats().healthy).toBe(true);
    await stream.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('clears its grace timer when the stream closes', async () => {
    const { api, clock, reflector, stream } = await established();
    api.watch.fail();
    await atRest();
    await stream.close();
    expect(reflector.stats().healthy).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('KubernetesReflector: stats', () => {
  it('reports phase, health, cursor, counts, bytes and times', async () => {
    const { api, clock, reflector, stream } = await watching();
    await clock.advance(1_000);
    expect(reflector.stats()).toMatchObject({
      phase: 'watching',
      healthy: true,
      cursor: '10',
      lists: 1,
      watchOpens: 1,
      lastSyncAtMs: 1_700_000_000_000,
    });
    const listed = reflector.stats().bytesDecoded;
    expect(listed).toBeGreaterThan(0);
    api.watch
      .push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) })
      .push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } })
      .push(errorFrame({ code: 500 }));
    await atRest();
    const stats = reflector.stats();
    expect(stats).toMatchObject({
      phase: 'backoff',
      // Relisting after a proven watch: a stale but correct view, still healthy for a while.
      healthy: true,
      events: { ADDED: 1, BOOKMARK: 1, ERROR: 1 },
      relists: { 'error-frame': 1 },
      lastError: 'ERROR frame 500',
    });
    expect(stats.cursor).toBeUndefined();
    expect(stats.bytesDecoded).toBeGreaterThan(listed);
    await clock.advance(800);
    expect(reflector.stats()).toMatchObject({ lists: 2, watchOpens: 2, cursor: '1' });
    await stream.close();
  });

  it('notifies on every change so a worker can forward stats', async () => {
    let calls = 0;
    const { stream } = await watching({ onStatsChange: () => (calls += 1) });
    expect(calls).toBeGreaterThan(0);
    await stream.close();
  });

  it('returns snapshots that later changes do not alter', async () => {
    const { api, reflector, stream } = await watching();
    const before = reflector.stats();
    api.watch.push({ type: 'ADDED', object: rawPod({ name: 'b', resourceVersion: '11' }) });
    await atRest();
    expect(before.events).toEqual({});
    expect(before.cursor).toBe('10');
    await stream.close();
  });

  it('rejects nonsensical options at construction', () => {
    const api = new FakePodApi();
    expect(() => new KubernetesReflector({ api, idleTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => new KubernetesReflector({ api, watchTimeoutSeconds: 0 })).toThrow(RangeError);
    expect(
      () => new KubernetesReflector({ api, backoff: { initialMs: 5_000, maxMs: 1_000 } }),
    ).toThrow(RangeError);
  });
});

describe('KubernetesReflector: progress of a long LIST', () => {
  it('shows pages and pods read so far in stats().listProgress while listing, and nothing after', async () => {
    const { api, clock, reflector, logger } = setup();
    api.queueList('hang');
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    expect(reflector.stats().listProgress).toEqual({
      pages: 0,
      pods: 0,
      startedAtMs: 1_700_000_000_000,
    });
    const onPage = api.lists[0]?.options.onPage;
    onPage?.({ pages: 1, pods: 500 }, []);
    expect(reflector.stats().listProgress).toMatchObject({ pages: 1, pods: 500 });
    // Logged at info at most every LIST_PROGRESS_LOG_INTERVAL_MS (2 s).
    await clock.advance(2_000);
    onPage?.({ pages: 2, pods: 1_000 }, []);
    onPage?.({ pages: 3, pods: 1_500 }, []);
    await clock.advance(1_000);
    onPage?.({ pages: 4, pods: 2_000 }, []);
    const progressLines = logger.lines.filter((l) => l.msg === 'reflector LIST in progress');
    expect(progressLines).toEqual([
      {
        level: 'info',
        obj: { pages: 2, pods: 1_000, elapsedMs: 2_000 },
        msg: 'reflector LIST in progress',
      },
    ]);
    await stream.close();
  });

  it('clears listProgress once the LIST completed', async () => {
    const { reflector, stream } = await watching();
    expect(reflector.stats().listProgress).toBeUndefined();
    await stream.close();
  });
});
