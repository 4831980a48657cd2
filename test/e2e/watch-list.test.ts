/**
 * Watch-list against a real kube-apiserver (watch cache on, as in production): the initial sync
 * and every relist as one WATCH with `sendInitialEvents`, its initial-events-end bookmark
 * publishing the world, the same stream then followed as the watch; its initial events handed on
 * in a LIST's pages (500 pods each, numbered from 1), with gzip and without; a restart of the
 * apiserver under a sync read over HTTP/2 (no proxy between: the fault matrix's proxy speaks
 * HTTP/1.1 only); and the built
 * service's fallback to LIST + WATCH when the fault proxy refuses watch-list as a server with it
 * off would.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KubernetesReflector } from '../../src/kubernetes/reflector/reflector.js';
import { connectPodApi } from '../../src/kubernetes/resources/http-pod-api.js';
import { podKey } from '../../src/model/pod.js';
import { FaultProxy } from './fault-proxy.js';
import {
  adminCore,
  Churn,
  namespaceWithRole,
  ServiceProcess,
  waitForConvergence,
} from './fault-support.js';
import { managed, SELECTOR, useReflectorSuite, waitUntil } from './support-reflector.js';

/** Pods for the batched initial events: two full pages of 500 and one of 201. */
const MANY_PODS = 1_201;
/** Pod creations in flight at once: quick, without crowding the apiserver on 2 cores. */
const CREATE_CONCURRENCY = 16;

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

  it('over HTTP/2 straight to the apiserver, follows changes across its restart and is healthy again', async () => {
    const { pods } = await setUp();
    await pods.create('r-0', managed('r'));
    const watched = await startLoop(pods.namespace, { source: { initialList: 'watch-list' } });
    await waitUntil('the watch is healthy', () => watched.source.stats().healthy);
    const opensBefore = watched.source.stats().watchOpens;

    await suite.env.restartApiserver();
    // Only a stream on a new connection can see this: the old session went with the process.
    await pods.create('r-1', managed('r'));
    await pods.delete('r-0');
    await watched.waitForMembership({ r: ['r-1'] });
    await waitUntil('the watch is healthy again', () => watched.source.stats().healthy);
    expect(watched.source.stats().watchOpens).toBeGreaterThan(opensBefore);
  });

  it('hands 1,201 initial events on in pages of 500 numbered 1 to 3, then one replace at the end bookmark, with gzip and without', async () => {
    const { namespace, pods } = await setUp();
    const names = Array.from({ length: MANY_PODS }, (_, i) => `many-${i}`);
    for (let start = 0; start < names.length; start += CREATE_CONCURRENCY) {
      await Promise.all(
        names
          .slice(start, start + CREATE_CONCURRENCY)
          .map((name) => pods.create(name, managed('many'))),
      );
    }
    const before = await pods.core.listNamespacedPod({ namespace, labelSelector: SELECTOR });
    const listedAt = BigInt(before.metadata?.resourceVersion ?? '0');
    for (const apiCompression of [false, true]) {
      const pages: Array<[number, number]> = [];
      const reflector = new KubernetesReflector({
        api: await connectPodApi({ kubeconfigPath: suite.env.kubeconfigPath, apiCompression }),
        namespace,
        labelSelector: SELECTOR,
        initialList: 'watch-list',
        onListPage: (items, page) => pages.push([page, items.length]),
      });
      const events = reflector.watch()[Symbol.asyncIterator]();
      try {
        const first = await events.next();
        if (first.done || first.value.type !== 'replace') throw new Error('expected a replace');
        expect(pages, `gzip ${apiCompression}`).toEqual([
          [1, 500],
          [2, 500],
          [3, 201],
        ]);
        const keys = [...first.value.objects.values()].map(podKey).sort();
        expect(keys).toEqual(names.map((name) => `${namespace}/${name}`).sort());
        const stats = reflector.stats();
        expect(stats).toMatchObject({
          lists: 1,
          watchOpens: 1,
          initialList: 'watch-list',
          watchListFallbacks: 0,
        });
        // The end bookmark's version: the freshest state, not older than a LIST made before.
        expect(BigInt(stats.cursor ?? '0') >= listedAt).toBe(true);
      } finally {
        await events.return?.();
      }
    }
  });
});

describe('the built service falls back to LIST + WATCH where watch-list is refused', () => {
  const suite = useReflectorSuite({ watchCache: true }, 'watch-list-fallback');
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('syncs by LIST + WATCH, says so once in /api/v1/reflector, and follows changes', async () => {
    const env = suite.env;
    const core = adminCore(env);
    const namespace = await namespaceWithRole(env, 'wlf');
    const churn = new Churn(env.kubeConfig, namespace, { seed: 7, maxOps: 20 });
    await churn.seed();
    const proxy = await FaultProxy.start({ upstream: env.server, upstreamCaPath: env.caPath });
    cleanups.push(() => proxy.close());
    proxy.setFault({ kind: 'refuse-watch-list' });
    const kubeconfigPath = proxy.writeKubeconfig(
      join(env.stateDir, `${namespace}.kubeconfig.json`),
      env.unprivileged.token,
    );
    const service = await ServiceProcess.start({ kubeconfigPath, namespace });
    cleanups.push(() => service.kill());
    await waitForConvergence(() => service.store(namespace), core, namespace, 30_000, 'sync');
    const reflector = await service.json<Record<string, unknown>>('/api/v1/reflector');
    expect(reflector).toMatchObject({ initialList: 'list', watchListFallbacks: 1 });
    expect(proxy.counters.injected['refuse-watch-list']).toBe(1);
    // It stays on LIST + WATCH: changes arrive, and no second watch-list is tried.
    churn.start();
    await waitUntil('the churn made 10 changes', () => churn.total >= 10);
    await churn.stop();
    await waitForConvergence(() => service.store(namespace), core, namespace, 10_000);
    expect(proxy.counters.injected['refuse-watch-list']).toBe(1);
    const warned = service.stdout
      .split('\n')
      .filter((line) => line.includes('does not serve watch-list'));
    expect(warned).toHaveLength(1);
  });
});
