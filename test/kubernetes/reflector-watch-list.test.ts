/**
 * The reflector's watch-list (`initialList: 'watch-list'`): the world read from one WATCH's
 * initial events, published at the initial-events-end bookmark, the stream then followed as the
 * watch; and every way it falls back to LIST + WATCH. Request sequences on the fake clock.
 */
import { describe, expect, it } from 'vitest';
import { forcedGc } from '../../bench/forced-gc.js';
import { ApiConnectionError, ApiStatusError } from '../../src/kubernetes/client/api-errors.js';
import { KubernetesReflector } from '../../src/kubernetes/reflector/reflector.js';
import { type Pod, podKey } from '../../src/model/pod.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';
import { decodedEvents } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodApi } from '../support/fake-pod-api.js';
import { rawPod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { reflectorAtRest } from '../support/reflector-at-rest.js';
import { until } from '../support/until.js';

/** `script` queues the fake's answers before the stream opens its first request. */
function setup(script: (api: FakePodApi) => void = () => {}) {
  const clock = new FakeClock();
  const api = new FakePodApi(clock);
  script(api);
  const logger = new RecordingLogger();
  const pages: Array<[number, string[]]> = [];
  const reflector = new KubernetesReflector({
    api,
    clock,
    logger,
    random: () => 0,
    initialList: 'watch-list',
    onListPage: (pods, page) => pages.push([page, pods.map((p) => podKey(p))]),
  });
  const stream = drain(decodedEvents(reflector.watch()));
  /** Waits until the reflector did all it can without the clock or the test. */
  const atRest = () => reflectorAtRest({ api, reflector });
  return { clock, api, logger, reflector, stream, pages, atRest };
}

const added = (name: string, resourceVersion: string) => ({
  type: 'ADDED',
  object: rawPod({ name, resourceVersion }),
});
const endBookmark = (resourceVersion: string) => ({
  type: 'BOOKMARK',
  object: {
    kind: 'Pod',
    metadata: { resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
  },
});

function keysOf(event: SourceEvent<Pod> | undefined): string[] {
  return event?.type === 'replace' ? [...event.objects.keys()].sort() : [];
}

describe('KubernetesReflector watch-list', () => {
  it('opens with one WATCH asking for the initial events, from the freshest state', async () => {
    const { api, stream, atRest } = setup();
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST']);
    expect(api.requests[0]).toMatchObject({ resourceVersion: '', sendInitialEvents: true });
    await stream.close();
  });

  it('publishes the initial events as one replace at the end bookmark, then follows the same stream', async () => {
    const { api, reflector, stream, pages, atRest } = setup();
    await atRest();
    api.watch.push(added('a', '11')).push(added('b', '12')).push(endBookmark('20'));
    await atRest();
    expect(stream.items).toHaveLength(1);
    expect(keysOf(stream.items[0])).toEqual(['default/a', 'default/b']);
    expect(pages).toEqual([[1, ['default/a', 'default/b']]]);
    // The same stream is the watch now: no second request, and it is proven (healthy) at once.
    expect(reflector.stats()).toMatchObject({
      phase: 'watching',
      healthy: true,
      cursor: '20',
      lists: 1,
      watchOpens: 1,
      initialList: 'watch-list',
      watchListFallbacks: 0,
    });
    api.watch.push({ type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '21' }) });
    await atRest();
    expect(stream.items[1]).toMatchObject({ type: 'delete', key: 'default/a' });
    expect(api.log).toEqual(['WATCH-LIST']);
    expect(reflector.stats().cursor).toBe('21');
    await stream.close();
    expect(api.watches[0]?.released).toBe(true);
  });

  it('streams the initial events to onListPage in pages of 500, numbered from 1, then publishes them all at the end bookmark', async () => {
    const { api, reflector, stream, pages, atRest } = setup();
    await atRest();
    const sent = Array.from({ length: 1_001 }, (_, i) => `p${i}`);
    for (const [i, name] of sent.entries()) api.watch.push(added(name, String(100 + i)));
    await atRest();
    expect(pages.map(([page, names]) => [page, names.length])).toEqual([
      [1, 500],
      [2, 500],
    ]);
    expect(stream.items).toHaveLength(0);
    api.watch.push(endBookmark('2000'));
    await atRest();
    expect(pages.map(([page, names]) => [page, names.length])).toEqual([
      [1, 500],
      [2, 500],
      [3, 1],
    ]);
    // The pages are the initial events in the order they came, each pod once.
    expect(pages.flatMap(([, keys]) => keys)).toEqual(sent.map((name) => `default/${name}`));
    expect(stream.items).toHaveLength(1);
    expect(keysOf(stream.items[0])).toEqual(sent.map((name) => `default/${name}`).sort());
    expect(reflector.stats()).toMatchObject({ cursor: '2000', lists: 1, phase: 'watching' });
    expect(api.log).toEqual(['WATCH-LIST']);
    await stream.close();
  });

  it('goes on as a plain WATCH from its cursor when the watch-list stream ends: no LIST, no second watch-list', async () => {
    const { api, clock, reflector, stream, atRest } = setup();
    await atRest();
    api.watch.push(added('a', '11')).push(added('b', '12')).push(endBookmark('20'));
    await atRest();
    // Quiet for two minutes (short of the stall limit): nothing else is asked of the server.
    await clock.advance(120_000);
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST']);
    api.watch.push({ type: 'MODIFIED', object: rawPod({ name: 'a', resourceVersion: '25' }) });
    api.watch.end(); // the server's timeoutSeconds ran out
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'WATCH rv=25']);
    expect(api.requests[1]).not.toHaveProperty('sendInitialEvents');
    expect(api.requests[1]?.at).toBe(120_000); // a clean end: at once
    expect(stream.items.map((event) => event.type)).toEqual(['replace', 'upsert']);
    expect(reflector.stats()).toMatchObject({ lists: 1, watchOpens: 2, watchListFallbacks: 0 });
    await stream.close();
  });

  it('starts its pages again from 1 when a DELETE comes among the initial events, without the deleted pod', async () => {
    const { api, reflector, stream, pages, atRest } = setup();
    await atRest();
    for (let i = 0; i < 600; i += 1) api.watch.push(added(`p${i}`, String(100 + i)));
    await atRest();
    expect(pages.map(([page, names]) => [page, names.length])).toEqual([[1, 500]]);
    api.watch.push({ type: 'DELETED', object: rawPod({ name: 'p3', resourceVersion: '800' }) });
    for (let i = 600; i < 610; i += 1) api.watch.push(added(`p${i}`, String(200 + i)));
    api.watch.push(endBookmark('900'));
    await atRest();
    // The pages heard since the last page 1 are the world the replace publishes, pod for pod.
    const restart = pages.map(([page]) => page).lastIndexOf(1);
    expect(restart).toBeGreaterThan(0);
    const current = pages.slice(restart);
    expect(current.map(([page]) => page)).toEqual(current.map((_, index) => index + 1));
    const heard = current.flatMap(([, keys]) => keys);
    expect(heard).not.toContain('default/p3');
    expect([...heard].sort()).toEqual(keysOf(stream.items[0]));
    expect(keysOf(stream.items[0])).toHaveLength(609);
    expect(stream.items).toHaveLength(1);
    expect(reflector.stats()).toMatchObject({ cursor: '900', lists: 1 });
    expect(api.log).toEqual(['WATCH-LIST']);
    await stream.close();
  });

  it('voids the pages heard when DELETEs empty the world among the initial events: an empty page 1', async () => {
    const { api, stream, pages, atRest } = setup();
    await atRest();
    for (let i = 0; i < 500; i += 1) api.watch.push(added(`p${i}`, String(100 + i)));
    await atRest();
    expect(pages.map(([page, names]) => [page, names.length])).toEqual([[1, 500]]);
    for (let i = 0; i < 500; i += 1) {
      api.watch.push({
        type: 'DELETED',
        object: rawPod({ name: `p${i}`, resourceVersion: String(700 + i) }),
      });
    }
    api.watch.push(endBookmark('1300'));
    await atRest();
    expect(keysOf(stream.items[0])).toEqual([]);
    // Without it the consumer (the worker) would keep the 500 pods of the void page 1.
    expect(pages.map(([page, names]) => [page, names.length])).toEqual([
      [1, 500],
      [1, 0],
    ]);
    await stream.close();
  });

  it('relists by watch-list again after the cursor expires', async () => {
    const { api, stream, atRest } = setup();
    await atRest();
    api.watch.push(endBookmark('20'));
    await atRest();
    api.watch.push({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired', status: 'Failure' },
    });
    await atRest(); // the cursor was proven live: at once
    expect(api.log).toEqual(['WATCH-LIST', 'WATCH-LIST']);
    await stream.close();
  });

  it('falls back to LIST + WATCH for good when the server refuses the request (422)', async () => {
    const { api, clock, logger, reflector, stream, atRest } = setup((fake) => {
      fake.queueWatch(new ApiStatusError('WATCH', { code: 422, reason: 'Invalid', causes: [] }));
      fake.queueList({ pods: [], resourceVersion: '30' });
    });
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(reflector.stats()).toMatchObject({ initialList: 'list', watchListFallbacks: 1 });
    expect(logger.entries.filter((e) => e.level === 'warn')).toHaveLength(1);
    // A later relist stays on LIST (after the backoff: that WATCH had not proven its cursor).
    api.watch.push({ type: 'ERROR', object: { kind: 'Status', code: 410, status: 'Failure' } });
    await clock.advance(800);
    expect(api.log.slice(3)).toEqual(['LIST', 'WATCH rv=1']);
    await stream.close();
  });

  it('falls back for good on a bookmark without the end annotation (a server that ignored it)', async () => {
    const { api, reflector, stream, atRest } = setup();
    api.queueList({ pods: [], resourceVersion: '30' });
    await atRest();
    api.watch
      .push(added('a', '11'))
      .push({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } });
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(api.watches[0]?.released).toBe(true);
    expect(reflector.stats()).toMatchObject({ initialList: 'list', watchListFallbacks: 1 });
    expect(keysOf(stream.items[0])).toEqual([]);
    await stream.close();
  });

  it('falls back once, at once, when the watch-list fails midway; the next relist tries it again', async () => {
    const { api, clock, logger, reflector, stream, atRest } = setup();
    api.queueList({ pods: [], resourceVersion: '30' });
    await atRest();
    api.watch.push(added('a', '11')).fail(new Error('socket hang up'));
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(reflector.stats()).toMatchObject({ initialList: 'watch-list', watchListFallbacks: 1 });
    expect(keysOf(stream.items[0])).toEqual([]); // the LIST's world, not the partial watch-list
    await clock.advance(1_000);
    api.watch.push({ type: 'ERROR', object: { kind: 'Status', code: 410, status: 'Failure' } });
    await atRest();
    expect(api.log.at(-1)).toBe('WATCH-LIST');
    // Logged at warn once; later fallbacks at debug.
    api.watch.fail(new Error('socket hang up'));
    await atRest();
    expect(
      logger.entries.filter((e) => e.level === 'warn' && /watch-list/.test(e.msg ?? '')),
    ).toHaveLength(1);
    await stream.close();
  });

  it('retries watch-list after the short wait when nothing answered: the server is down', async () => {
    const { api, clock, reflector, stream, atRest } = setup((fake) =>
      fake.queueWatch(new ApiConnectionError('WATCH', new Error('connect ECONNREFUSED'), false)),
    );
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST']);
    await clock.advance(999);
    expect(api.log).toEqual(['WATCH-LIST']);
    await clock.advance(1);
    expect(api.log).toEqual(['WATCH-LIST', 'WATCH-LIST']);
    expect(reflector.stats().watchListFallbacks).toBe(0);
    await stream.close();
  });

  it('falls back once when the watch ends before its initial events did', async () => {
    const { api, reflector, stream, atRest } = setup();
    api.queueList({ pods: [], resourceVersion: '30' });
    await atRest();
    api.watch.push(added('a', '11')).end();
    await atRest();
    expect(api.log).toEqual(['WATCH-LIST', 'LIST', 'WATCH rv=30']);
    expect(reflector.stats()).toMatchObject({
      initialList: 'watch-list',
      watchListFallbacks: 1,
      lastError: 'watch-list: the watch ended before its initial events did',
    });
    await stream.close();
  });
});

describe('KubernetesReflector watch-list memory', () => {
  // The worker kept the initial events' map (every pod of the world) for as long as it followed
  // the watch: the generator's frame outlives the replace. One event later it must be garbage.
  // (Until then the delegating generator's last result still holds it: V8's yield*, not ours.)
  it('lets go of the initial events it handed on once the watch moves on', async () => {
    const clock = new FakeClock();
    const api = new FakePodApi(clock);
    const reflector = new KubernetesReflector({
      api,
      clock,
      logger: new RecordingLogger(),
      random: () => 0,
      initialList: 'watch-list',
    });
    const iterator = decodedEvents(reflector.watch())[Symbol.asyncIterator]();
    const first = iterator.next();
    await reflectorAtRest({ api, reflector });
    api.watch.push(added('a', '11')).push(added('b', '12')).push(endBookmark('20'));
    const handedOn = await first;
    if (handedOn.done || handedOn.value.type !== 'replace') throw new Error('expected a replace');
    const world = new WeakRef(handedOn.value.objects);
    // The consumer is done with the replace, as the worker is once it has sent it on.
    handedOn.value = { type: 'synced' } as never;
    const changed = iterator.next();
    await reflectorAtRest({ api, reflector });
    api.watch.push({ type: 'MODIFIED', object: rawPod({ name: 'a', resourceVersion: '21' }) });
    expect((await changed).value).toMatchObject({ type: 'upsert', key: 'default/a' });
    const following = iterator.next();
    await reflectorAtRest({ api, reflector });
    const gc = forcedGc();
    await until(
      () => {
        gc();
        return world.deref() === undefined;
      },
      { what: 'the handed-on map of the initial events to be collected' },
    );
    await iterator.return?.(undefined as never);
    await following;
  });
});
