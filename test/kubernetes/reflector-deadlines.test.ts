/**
 * The reflector cannot be stalled: a WATCH that delivers no whole frame for two bookmark
 * intervals is replaced (and readiness falls meanwhile), and a watch-list whose
 * initial-events-end bookmark never comes falls back to LIST + WATCH after a deadline.
 * Request sequences on the fake clock.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_INITIAL_EVENTS_DEADLINE_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  KubernetesReflector,
  type KubernetesReflectorOptions,
} from '../../src/kubernetes/reflector/reflector.js';
import { decodedEvents } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodApi } from '../support/fake-pod-api.js';
import { pod, rawPod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { reflectorAtRest } from '../support/reflector-at-rest.js';

function setup(options: Partial<KubernetesReflectorOptions> = {}) {
  const clock = new FakeClock();
  const api = new FakePodApi(clock);
  const logger = new RecordingLogger();
  const reflector = new KubernetesReflector({ api, clock, logger, random: () => 0, ...options });
  const atRest = () => reflectorAtRest({ api, reflector });
  return { clock, api, logger, reflector, atRest };
}

const bookmark = (resourceVersion: string) => ({
  type: 'BOOKMARK',
  object: { kind: 'Pod', metadata: { resourceVersion } },
});
const endBookmark = (resourceVersion: string) => ({
  type: 'BOOKMARK',
  object: {
    kind: 'Pod',
    metadata: { resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
  },
});
const added = (name: string, resourceVersion: string) => ({
  type: 'ADDED',
  object: rawPod({ name, resourceVersion }),
});

/** LIST + WATCH, the WATCH proven by a bookmark at `10`. */
async function watchingWithBookmarks(options: Partial<KubernetesReflectorOptions> = {}) {
  const h = setup(options);
  h.api.queueList({ pods: [pod({ name: 'a', resourceVersion: '5' })], resourceVersion: '5' });
  const stream = drain(decodedEvents(h.reflector.watch()));
  await h.atRest();
  h.api.watch.push(bookmark('10'));
  await h.atRest();
  return { ...h, stream };
}

describe('KubernetesReflector: a stalled watch', () => {
  it('is two bookmark intervals and a little more: 125 s, well inside the 300 s idle limit', () => {
    expect(DEFAULT_STALL_TIMEOUT_MS).toBe(125_000);
    expect(DEFAULT_STALL_TIMEOUT_MS).toBeLessThan(DEFAULT_IDLE_TIMEOUT_MS);
  });

  it('is replaced when half a frame came and then nothing, and readiness falls until the new one proves itself', async () => {
    const { api, clock, reflector, stream, atRest, logger } = await watchingWithBookmarks();
    expect(reflector.stats().healthy).toBe(true);
    await clock.advance(60_000);
    api.watch.trickle(300); // bytes of a frame that never completes
    await clock.advance(DEFAULT_STALL_TIMEOUT_MS - 60_000 - 1);
    expect(api.watches[0]?.released).toBe(false);
    expect(reflector.stats().healthy).toBe(true);
    await clock.advance(1);
    await atRest();
    expect(api.watches[0]?.released).toBe(true);
    expect(reflector.stats()).toMatchObject({
      healthy: false,
      stalledWatches: 1,
      lastError:
        'no whole watch frame from the API server for 125000 ms (it sends a bookmark about every minute)',
    });
    expect(logger.mentioning('reconnecting from the cursor', 'warn')).toHaveLength(1);
    // The backoff (its streak was ended by the proven watch), then a WATCH from the cursor.
    await clock.advance(800);
    expect(api.log).toEqual(['LIST', 'WATCH rv=5', 'WATCH rv=10']);
    expect(reflector.stats().healthy).toBe(false);
    api.watch.push(bookmark('11'));
    await atRest();
    expect(reflector.stats()).toMatchObject({ healthy: true, cursor: '11', lists: 1 });
    await stream.close();
  });

  it('counts only whole frames: each one moves the deadline', async () => {
    const { api, clock, reflector, stream, atRest } = await watchingWithBookmarks();
    for (let minute = 1; minute <= 10; minute += 1) {
      await clock.advance(60_000);
      api.watch.push(bookmark(String(10 + minute)));
      await atRest();
    }
    expect(api.log).toEqual(['LIST', 'WATCH rv=5']);
    expect(reflector.stats()).toMatchObject({ healthy: true, stalledWatches: 0 });
    await stream.close();
  });

  it('replaces a WATCH that never delivers a frame from a server known to send bookmarks', async () => {
    const { api, clock, reflector, stream, atRest } = await watchingWithBookmarks();
    await clock.advance(1_000); // a watch that lasted a second: its clean end reconnects at once
    api.watch.end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=5', 'WATCH rv=10']);
    await clock.advance(DEFAULT_STALL_TIMEOUT_MS);
    await atRest();
    expect(api.watches[1]?.released).toBe(true);
    expect(reflector.stats().stalledWatches).toBe(1);
    await stream.close();
  });

  it('is not assumed of a server never seen sending a bookmark: only the idle limit applies', async () => {
    const { api, clock, reflector, atRest } = setup();
    api.queueList({ pods: [], resourceVersion: '5' });
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    api.watch.push(added('a', '6'));
    await atRest();
    await clock.advance(DEFAULT_STALL_TIMEOUT_MS * 2);
    expect(api.watches[0]?.released).toBe(false);
    expect(reflector.stats()).toMatchObject({ healthy: true, stalledWatches: 0 });
    await clock.advance(DEFAULT_IDLE_TIMEOUT_MS - DEFAULT_STALL_TIMEOUT_MS * 2);
    expect(api.watches[0]?.released).toBe(true);
    await stream.close();
  });

  it('takes its limit from stallTimeoutMs, and refuses one that is not positive', async () => {
    const { api, clock, reflector, stream } = await watchingWithBookmarks({
      stallTimeoutMs: 5_000,
    });
    await clock.advance(5_000);
    expect(api.watches[0]?.released).toBe(true);
    expect(reflector.stats().stalledWatches).toBe(1);
    await stream.close();
    expect(() => setup({ stallTimeoutMs: 0 })).toThrow('stallTimeoutMs must be positive');
  });
});

describe('KubernetesReflector: the initial-events-end deadline', () => {
  function watchList(options: Partial<KubernetesReflectorOptions> = {}) {
    const h = setup({ initialList: 'watch-list', ...options });
    const stream = drain(decodedEvents(h.reflector.watch()));
    return { ...h, stream };
  }

  it('is ten seconds', () => {
    expect(DEFAULT_INITIAL_EVENTS_DEADLINE_MS).toBe(10_000);
  });

  it('falls back to LIST + WATCH 10 s after the last initial event when the end bookmark is stripped', async () => {
    const { api, clock, logger, reflector, stream, atRest } = watchList();
    api.queueList({ pods: [pod({ name: 'a', resourceVersion: '11' })], resourceVersion: '30' });
    await atRest();
    await clock.advance(3_000);
    api.watch.push(added('a', '11')).push(added('b', '12'));
    await atRest();
    await clock.advance(DEFAULT_INITIAL_EVENTS_DEADLINE_MS - 1);
    expect(api.log).toEqual(['WATCH-LIST']);
    await clock.advance(1);
    await atRest();
    expect(api.watches[0]?.released).toBe(true);
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(stream.items[0]?.type).toBe('replace');
    expect(reflector.stats()).toMatchObject({
      initialList: 'watch-list',
      watchListFallbacks: 1,
      initialEventsTimeouts: 1,
      lists: 1,
      lastError:
        'watch-list: the initial-events-end bookmark did not come within 10000 ms of the last initial event',
    });
    expect(logger.mentioning('falling back to one LIST + WATCH', 'warn')).toHaveLength(1);
    await stream.close();
  });

  it('falls back 10 s after the request when nothing at all comes (not after the 300 s idle limit)', async () => {
    const { api, clock, reflector, stream, atRest } = watchList();
    api.queueWatch('hang');
    api.queueList({ pods: [], resourceVersion: '30' });
    await atRest();
    await clock.advance(DEFAULT_INITIAL_EVENTS_DEADLINE_MS);
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(reflector.stats().initialEventsTimeouts).toBe(1);
    await stream.close();
  });

  it('waits as long as initial events keep coming, however long the watch-list takes', async () => {
    const { api, clock, reflector, stream, atRest } = watchList();
    await atRest();
    for (let index = 0; index < 30; index += 1) {
      await clock.advance(DEFAULT_INITIAL_EVENTS_DEADLINE_MS - 1_000);
      api.watch.push(added(`p${index}`, String(100 + index)));
      await atRest();
    }
    api.watch.push(endBookmark('200'));
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST']);
    expect(reflector.stats()).toMatchObject({ lists: 1, initialEventsTimeouts: 0, healthy: true });
    await stream.close();
  });

  it('stops being moved by events once one is not an initial event (a live change before the stripped bookmark)', async () => {
    const { api, clock, reflector, stream, atRest } = watchList();
    api.queueList({ pods: [], resourceVersion: '30' });
    await atRest();
    api.watch.push(added('a', '11'));
    await clock.advance(5_000);
    api.watch.push({ type: 'MODIFIED', object: rawPod({ name: 'a', resourceVersion: '12' }) });
    await clock.advance(4_000);
    api.watch.push(added('b', '13')); // a pod created live, not an initial event
    await atRest();
    await clock.advance(1_000);
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(reflector.stats().initialEventsTimeouts).toBe(1);
    await stream.close();
  });

  it('is off once the end bookmark came: the watch then goes on without it', async () => {
    const { api, clock, reflector, stream, atRest } = watchList();
    await atRest();
    api.watch.push(added('a', '11')).push(endBookmark('20'));
    await atRest();
    await clock.advance(DEFAULT_INITIAL_EVENTS_DEADLINE_MS * 5);
    expect(api.log).toEqual(['WATCH-LIST']);
    expect(reflector.stats()).toMatchObject({ healthy: true, initialEventsTimeouts: 0 });
    await stream.close();
  });

  it('takes its limit from initialEventsDeadlineMs, and refuses one that is not positive', async () => {
    const { api, clock, stream, atRest } = watchList({ initialEventsDeadlineMs: 2_000 });
    await atRest();
    await clock.advance(2_000);
    await atRest();
    expect(api.log.slice(0, 2)).toEqual(['WATCH-LIST', 'LIST']);
    await stream.close();
    expect(() => setup({ initialEventsDeadlineMs: -1 })).toThrow(
      'initialEventsDeadlineMs must be positive',
    );
  });
});
