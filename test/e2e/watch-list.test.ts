/**
 * Watch-list against a real kube-apiserver (watch cache on, as in production): the initial sync
 * and every relist as one WATCH with `sendInitialEvents`, its initial-events-end bookmark
 * publishing the world, the same stream then followed as the watch. The fallback forced by the
 * fault proxy lives in fault-matrix.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { managed, useReflectorSuite, waitUntil } from './support-reflector.js';

describe('watch-list on a real apiserver (watch cache on)', () => {
  const suite = useReflectorSuite({ watchCache: true }, 'watch-list');
  const { setUp, startLoop } = suite;

  it('syncs from one WATCH and follows the same stream, with no LIST at all', async () => {
    const { pods } = await setUp();
    await pods.create('a-0', managed('a'));
    await pods.create('a-1', managed('a'));
    await pods.create('b-0', managed('b'));
    const watched = await startLoop(pods.namespace, { source: { initialList: 'watch-list' } });
    expect(watched.membership()).toEqual({ a: ['a-0', 'a-1'], b: ['b-0'] });
    // The end bookmark proved the watch: healthy as soon as the stats after it arrive.
    await waitUntil('the watch is healthy', () => watched.source.stats().healthy);
    expect(watched.source.stats()).toMatchObject({
      initialList: 'watch-list',
      watchListFallbacks: 0,
      lists: 1,
      watchOpens: 1,
      phase: 'watching',
      healthy: true,
    });
    expect(watched.source.stats().cursor).toMatch(/^\d+$/);

    await pods.create('c-0', managed('c'));
    await pods.delete('a-0');
    await watched.waitForMembership({ a: ['a-1'], b: ['b-0'], c: ['c-0'] });
    // Changes came on the stream the sync was read from: still one request in all.
    expect(watched.source.stats()).toMatchObject({ lists: 1, watchOpens: 1 });
  });
});
