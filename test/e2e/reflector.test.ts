/**
 * The worker-backed pod source feeding a `ReconcileLoop` keyed by a label, against a real
 * kube-apiserver with the watch cache on (production-like): membership, label moves, the selector,
 * a watch's clean timeout, and bookmarks. Faults that need the cache off (compaction) or that
 * restart things live in reflector-faults.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FakeKubelet, onNode } from './environment/index.js';
import {
  CELL_LABEL,
  keyOf,
  MANAGED_LABEL,
  managed,
  podManifest,
  type RecordedEvent,
  useReflectorSuite,
  waitUntil,
} from './support-reflector.js';

describe('WorkerPodSource + ReconcileLoop on a real apiserver (watch cache on)', () => {
  const suite = useReflectorSuite({ watchCache: true }, 'reflector');
  const { setUp, startLoop } = suite;

  it('tracks membership as pods come and go, with the status a kubelet writes', async () => {
    const { namespace, pods } = await setUp();
    const kubelet = new FakeKubelet(suite.env.kubeConfig);
    await pods.create('a-0', managed('a'));
    await pods.createPod(onNode(podManifest('a-1', managed('a'))));
    await pods.createPod(onNode(podManifest('a-2', managed('a'))));
    await pods.create('b-0', managed('b'));
    await kubelet.markRunning(namespace, 'a-1');

    const watched = await startLoop(namespace);
    expect(watched.membership()).toEqual({ a: ['a-0', 'a-1', 'a-2'], b: ['b-0'] });
    const a1 = watched.loop.getByParent('a').find((pod) => pod.metadata.name === 'a-1');
    expect(a1?.status.phase).toBe('Running');

    // Pods come: two new ones, one of them in a new cell.
    await pods.create('b-1', managed('b'));
    await pods.create('c-0', managed('c'));
    // Status changes arrive as updates of the same member.
    await kubelet.markRunning(namespace, 'a-2');
    // Pods go: an unbound pod at once; a bound one only when the kubelet finalizes it.
    await pods.delete('a-0');
    await pods.delete('a-1');
    await watched.waitForMembership({ a: ['a-1', 'a-2'], b: ['b-0', 'b-1'], c: ['c-0'] });
    await waitUntil(
      'a-1 is terminating and a-2 is Running in the store',
      () => {
        const [first, second] = watched.loop.getByParent('a');
        return (
          first?.metadata.deletionTimestamp !== undefined && second?.status.phase === 'Running'
        );
      },
      { diagnose: () => watched.describe() },
    );
    const ready = watched.loop
      .getByParent('a')[1]
      ?.status.conditions.find((condition) => condition.type === 'Ready');
    expect(ready?.status).toBe('True');

    await kubelet.finalizeDeletion(namespace, 'a-1');
    await pods.delete('b-0');
    await watched.waitForMembership({ a: ['a-2'], b: ['b-1'], c: ['c-0'] });
    expect(watched.loop.objectCount).toBe(3);
    // The whole run was one LIST and one watch: nothing here should have needed a relist.
    expect(watched.stats().lists).toBe(1);
    // Every cell that changed was reconciled, and a reconcile saw the cell's final members.
    await watched.waitForReconcile('c', ['c-0']);
    await watched.waitForReconcile('b', ['b-1']);
  });

  it('moves a pod between parents when its label is patched, and drops it when the label is removed', async () => {
    const { namespace, pods } = await setUp();
    await pods.create('p-1', managed('a'));
    await pods.create('p-2', managed('a'));
    await pods.create('p-3', managed('b'));
    const watched = await startLoop(namespace);
    expect(watched.membership()).toEqual({ a: ['p-1', 'p-2'], b: ['p-3'] });

    const before = watched.reconciles.length;
    await pods.patchLabels('p-1', { [CELL_LABEL]: 'b' });
    await watched.waitForMembership({ a: ['p-2'], b: ['p-1', 'p-3'] });
    // Both the parent it left and the one it joined were re-driven.
    await watched.waitForReconcile('a', ['p-2'], before);
    await watched.waitForReconcile('b', ['p-1', 'p-3'], before);

    // Still selected, but no cell label: the key map cannot place it, so the store drops it.
    await pods.patchLabels('p-3', { [CELL_LABEL]: null });
    await watched.waitForMembership({ a: ['p-2'], b: ['p-1'] });
    expect(watched.loop.objectCount).toBe(2);
    const lastForP3 = watched.events.filter((e) => 'key' in e && e.key === keyOf(namespace, 'p-3'));
    // It is still in the selector, so the source sent an update (not a delete) without the label.
    expect(lastForP3.at(-1)).toEqual({
      type: 'upsert',
      key: keyOf(namespace, 'p-3'),
      cell: undefined,
      managed: 'yes',
    });
  });

  it('delivers a pod leaving and re-entering the selector as a delete, then an add', async () => {
    const { namespace, pods } = await setUp();
    await pods.create('mover', managed('a'));
    await pods.create('stayer', managed('a'));
    const watched = await startLoop(namespace);
    const key = keyOf(namespace, 'mover');

    await pods.patchLabels('mover', { [MANAGED_LABEL]: 'no' });
    await watched.waitForMembership({ a: ['stayer'] });
    await pods.patchLabels('mover', { [MANAGED_LABEL]: 'yes' });
    await watched.waitForMembership({ a: ['mover', 'stayer'] });

    const forMover = watched.events
      .slice(1)
      .filter((e): e is Exclude<RecordedEvent, { type: 'replace' }> => 'key' in e && e.key === key)
      .map((e) => e.type);
    expect(watched.events[0]).toEqual({
      type: 'replace',
      keys: [key, keyOf(namespace, 'stayer')],
    });
    expect(forMover).toEqual(['delete', 'upsert']);
    expect(watched.stats().events).toMatchObject({ DELETED: 1, ADDED: 1 });
    expect(watched.stats().lists).toBe(1);
  });

  it('scopes both the LIST and the WATCH by the label selector', async () => {
    const { namespace, pods } = await setUp();
    await pods.create('in-1', managed('a'));
    // Outside the selector: another value, and no managed label at all. Both carry a cell label,
    // so the key map would place them if they ever arrived.
    await pods.create('out-1', { [MANAGED_LABEL]: 'no', [CELL_LABEL]: 'a' });
    await pods.create('out-2', { [CELL_LABEL]: 'a' });

    const watched = await startLoop(namespace);
    expect(watched.events).toEqual([{ type: 'replace', keys: [keyOf(namespace, 'in-1')] }]);
    expect(watched.membership()).toEqual({ a: ['in-1'] });

    // After the start: more pods outside, a change to one outside, then one inside. The watch is
    // ordered, so once the last one arrives, anything outside would have arrived before it.
    await pods.create('out-3', { [MANAGED_LABEL]: 'no', [CELL_LABEL]: 'b' });
    await pods.patchLabels('out-2', { [CELL_LABEL]: 'b' });
    await pods.delete('out-1');
    await pods.create('in-2', managed('b'));
    await watched.waitForMembership({ a: ['in-1'], b: ['in-2'] });

    const keys = watched.events.flatMap((e) => ('key' in e ? [e.key] : e.keys));
    expect(keys.filter((key) => key.includes('/out-'))).toEqual([]);
    expect(watched.events.slice(1)).toEqual([
      { type: 'upsert', key: keyOf(namespace, 'in-2'), cell: 'b', managed: 'yes' },
    ]);
    const frames = watched.stats().events;
    expect(frames.ADDED).toBe(1);
    expect(frames.MODIFIED ?? 0).toBe(0);
    expect(frames.DELETED ?? 0).toBe(0);
  });

  it('reconnects after a real watch timeout without relisting', async () => {
    const { namespace, pods } = await setUp();
    await pods.create('a-0', managed('a'));
    const watched = await startLoop(namespace, { watchTimeoutSeconds: 2 });

    // Two server-side timeouts: the third WATCH is open.
    await waitUntil(
      'the watch timed out twice and reopened',
      () => watched.stats().watchOpens >= 3,
      {
        diagnose: () => watched.describe(),
      },
    );
    const afterTimeouts = watched.stats();
    expect(afterTimeouts.lists).toBe(1);
    expect(afterTimeouts.relists).toEqual({});
    expect(afterTimeouts.lastError).toBeUndefined();
    // Each WATCH ended cleanly (the server's timeoutSeconds), not by a failure.
    expect(
      watched.logger.mentioning('reflector watch ended; reconnecting').length,
    ).toBeGreaterThanOrEqual(2);
    expect(watched.logger.mentioning('reflector will relist')).toEqual([]);

    // Changes after the reconnects still arrive, through a resumed watch.
    await pods.create('a-1', managed('a'));
    await pods.delete('a-0');
    await watched.waitForMembership({ a: ['a-1'] });
    const end = watched.stats();
    expect(end.lists).toBe(1);
    expect(end.watchOpens).toBeGreaterThanOrEqual(3);
    expect(watched.opens).toBe(1);
    expect(watched.events.filter((e) => e.type === 'replace')).toHaveLength(1);
  });

  it('advances the cursor on a bookmark, with no pod event', async () => {
    const { namespace, pods } = await setUp();
    await pods.create('a-0', managed('a'));
    // The watch cache sends a bookmark 2 s before a watch's deadline (cacheWatcher's
    // nextBookmarkTime; otherwise about once a minute), so a 6 s timeout brings one at about 4 s.
    const watched = await startLoop(namespace, { watchTimeoutSeconds: 6 });
    const listCursor = watched.stats().cursor;
    expect(listCursor).toMatch(/^\d+$/);

    // Writes outside the selector move the apiserver's resourceVersion past the LIST's without
    // any event this watch selects; only a bookmark can carry the cursor there.
    let outside = '';
    for (const name of ['noise-1', 'noise-2']) {
      const pod = await pods.create(name, { [MANAGED_LABEL]: 'no', [CELL_LABEL]: 'a' });
      outside = pod.metadata?.resourceVersion ?? '';
    }
    await waitUntil(
      `a bookmark moved the cursor from ${listCursor} to at least ${outside}`,
      () => {
        const { cursor, events } = watched.stats();
        return (
          (events.BOOKMARK ?? 0) >= 1 && cursor !== undefined && BigInt(cursor) >= BigInt(outside)
        );
      },
      // Each 6 s watch offers one 2 s window for its bookmark; a CPU-starved apiserver can miss a
      // few in a row (seen at load > 5 on 2 cores), so wait for several watches, not just one.
      { timeoutMs: 60_000, diagnose: () => watched.describe() },
    );
    const stats = watched.stats();
    expect(stats.cursor).not.toBe(listCursor);
    expect(stats.events.ADDED ?? 0).toBe(0);
    expect(stats.events.MODIFIED ?? 0).toBe(0);
    expect(stats.events.DELETED ?? 0).toBe(0);
    expect(watched.events).toEqual([{ type: 'replace', keys: [keyOf(namespace, 'a-0')] }]);
    expect(stats.lists).toBe(1);
  });
});
