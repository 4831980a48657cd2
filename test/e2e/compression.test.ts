/**
 * `--kube-api-compression` against a real kube-apiserver (v1.37, `WatchListCompression` on),
 * both ways, on both ways of reading the world (`--initial-list watch-list` and `list`), in
 * protobuf and JSON: the built service reads the cluster through the fault proxy (no fault set),
 * which sees every request's `Accept-Encoding` and the apiserver's answer as it crossed the wire.
 *
 * What "the API server really answered gzip" rests on: the answer's `Content-Encoding: gzip`
 * header and its body beginning with gzip's magic bytes, both as the proxy forwarded them, and the
 * body bytes on the wire against the bytes the reflector decoded (`bytesDecoded` in
 * `/api/v1/reflector`, counted after gzip): several times fewer with compression, the same
 * without. The store is compared with the API server's pods as `namespace/name uid
 * resourceVersion`, after the sync and after a change that came on the watch.
 *
 * The pods carry a few KiB of annotation each, so a LIST page is past the 128 KiB under which
 * the apiserver never gzips a response (a watch-list is gzipped at any size).
 */
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Arrival, FaultProxy } from './fault-proxy.js';
import {
  adminCore,
  burstPod,
  namespaceWithRole,
  ServiceProcess,
  waitForConvergence,
} from './fault-support.js';
import { useReflectorSuite, waitUntil } from './support-reflector.js';

/** Pods in the namespace every case reads: one LIST page (the service's page is 500). */
const PODS = 40;
/**
 * Annotation text per pod: about 6 KiB, so 40 pods make a 250 KiB page in either encoding, well
 * past the apiserver's 128 KiB gzip threshold for a LIST. Model arguments, as an engine's
 * annotations might hold, compressible as real pods are (gzip takes a real pod list to ~1/13).
 */
function padding(index: number): string {
  return Array.from({ length: 300 }, (_, i) => `--arg-${i}=value-${(i * index) % 11}`).join(' ');
}
/**
 * With gzip the reflector decodes at least this many times the bytes that crossed the wire.
 * The 40 padded pods compress far better; the margin is for the plain WATCH after the sync.
 */
const MIN_GZIP_RATIO = 3;

type InitialList = 'watch-list' | 'list';

const ENCODINGS = [
  ['protobuf', 'application/vnd.kubernetes.protobuf'],
  ['JSON', 'application/json'],
] as const;
const PATHS: Array<[string, InitialList]> = [
  ['watch-list', 'watch-list'],
  ['LIST + WATCH', 'list'],
];

/** The pod LISTs and WATCHes among what the proxy saw. */
const podReads = (proxy: FaultProxy): Arrival[] =>
  proxy.arrivals.filter((a) => a.kind === 'list' || a.kind === 'watch');

/** A request as the assertions read it: what it was, what it asked for, how it was answered. */
function described(arrival: Arrival) {
  const watchList = arrival.query.get('sendInitialEvents') === 'true';
  return {
    request: arrival.kind === 'list' ? 'LIST' : watchList ? 'WATCH-LIST' : 'WATCH from a cursor',
    acceptEncoding: arrival.acceptEncoding,
    contentEncoding: arrival.answer?.contentEncoding,
    gzipMagic: arrival.answer?.gzipMagic,
  };
}

describe('--kube-api-compression on a real apiserver', () => {
  const suite = useReflectorSuite({ watchCache: true }, 'compression');
  let namespace = '';
  let core: CoreV1Api;
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  beforeAll(async () => {
    namespace = await namespaceWithRole(suite.env, 'gzip');
    core = adminCore(suite.env);
    for (let index = 0; index < PODS; index += 1) {
      const pod = burstPod(`burst-${index}`, index);
      pod.metadata = {
        ...pod.metadata,
        annotations: { ...pod.metadata?.annotations, 'e2e/engine-args': padding(index) },
      };
      await core.createNamespacedPod({ namespace, body: pod });
    }
  });

  /** The built service reading `namespace` through a fresh proxy, synced with the API server. */
  async function syncedService(args: readonly string[], label: string) {
    const env = suite.env;
    const proxy = await FaultProxy.start({ upstream: env.server, upstreamCaPath: env.caPath });
    cleanups.push(() => proxy.close());
    const kubeconfigPath = proxy.writeKubeconfig(
      join(env.stateDir, `${label}.kubeconfig.json`),
      env.unprivileged.token,
    );
    const service = await ServiceProcess.start({ kubeconfigPath, namespace, extraArgs: args });
    cleanups.push(() => service.kill());
    await waitForConvergence(() => service.store(namespace), core, namespace, 30_000, 'sync');
    return { proxy, service };
  }

  /** A pod created and deleted: both reach the store on the watch the sync left open. */
  async function changeOnTheWatch(service: ServiceProcess, name: string): Promise<void> {
    await core.createNamespacedPod({ namespace, body: burstPod(name, 99) });
    await waitForConvergence(() => service.store(namespace), core, namespace, 20_000, 'the add');
    await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 });
    await waitForConvergence(() => service.store(namespace), core, namespace, 20_000, 'the delete');
  }

  /** Drops the open watch at the proxy and waits for the service's next pod request. */
  async function reconnected(proxy: FaultProxy): Promise<Arrival> {
    const before = podReads(proxy).length;
    proxy.resetConnections();
    await waitUntil('the service watches again after its connection was reset', () =>
      podReads(proxy)
        .slice(before)
        .some((a) => a.answer !== undefined),
    );
    const next = podReads(proxy).slice(before)[0];
    if (!next) throw new Error('no pod request after the reset');
    return next;
  }

  /** Wire bytes of every pod read the proxy forwarded, and what the reflector decoded. */
  async function bytes(proxy: FaultProxy, service: ServiceProcess) {
    const wire = podReads(proxy).reduce((sum, a) => sum + (a.answer?.bytes ?? 0), 0);
    const { bytesDecoded } = await service.json<{ bytesDecoded: number }>('/api/v1/reflector');
    return { wire, decoded: bytesDecoded };
  }

  describe.each(ENCODINGS)('%s', (encoding, contentType) => {
    describe.each(PATHS)('%s', (_, initialList) => {
      const label = `${initialList}-${encoding}`.toLowerCase();
      const args = (compression: boolean) => [
        '--initial-list',
        initialList,
        '--kube-api-content-type',
        contentType,
        `--kube-api-compression=${compression}`,
      ];
      /** The requests that read the whole world, then the plain WATCH that follows them. */
      const wholeRead = initialList === 'watch-list' ? 'WATCH-LIST' : 'LIST';

      it('with it on: asks for gzip on the read of the world, is answered in gzip, converges; a WATCH from a cursor never asks', async () => {
        const { proxy, service } = await syncedService(args(true), `${label}-on`);
        const reads = podReads(proxy).map(described);
        expect(reads[0]).toEqual({
          request: wholeRead,
          acceptEncoding: 'gzip',
          contentEncoding: 'gzip',
          gzipMagic: true,
        });
        if (initialList === 'watch-list') {
          // The initial events' stream goes on as the watch: the one request so far.
          expect(reads).toHaveLength(1);
        } else {
          // The WATCH from the LIST's version opens once the LIST is handed on, and the store
          // can converge before its answer's headers are back: wait for them, then look.
          await waitUntil("the WATCH from the LIST's version to be answered", () =>
            podReads(proxy)
              .slice(1)
              .some((a) => a.answer !== undefined),
          );
          expect(podReads(proxy).map(described).slice(1)).toEqual([
            {
              request: 'WATCH from a cursor',
              acceptEncoding: undefined,
              contentEncoding: undefined,
              gzipMagic: false,
            },
          ]);
        }
        await changeOnTheWatch(service, `late-${label}-on`);
        const reconnect = described(await reconnected(proxy));
        expect(reconnect).toEqual({
          request: 'WATCH from a cursor',
          acceptEncoding: undefined,
          contentEncoding: undefined,
          gzipMagic: false,
        });
        await waitForConvergence(() => service.store(namespace), core, namespace, 20_000);
        const { wire, decoded } = await bytes(proxy, service);
        expect(decoded, `${decoded} bytes decoded from ${wire} on the wire`).toBeGreaterThan(
          MIN_GZIP_RATIO * wire,
        );
        expect(await service.json('/api/v1/reflector')).toMatchObject({
          initialList,
          watchListFallbacks: 0,
          lists: 1,
        });
      });

      it('with it off: asks for no gzip anywhere, is answered plain, converges', async () => {
        const { proxy, service } = await syncedService(args(false), `${label}-off`);
        await changeOnTheWatch(service, `late-${label}-off`);
        const reads = podReads(proxy).map(described);
        expect(reads[0]?.request).toBe(wholeRead);
        for (const read of reads) {
          expect(read).toMatchObject({
            acceptEncoding: undefined,
            contentEncoding: undefined,
            gzipMagic: false,
          });
        }
        // Every byte that crossed the wire was decoded as it came: nothing was inflated.
        await waitUntil(
          'the reflector decoded exactly the bytes on the wire',
          async () => {
            const { wire, decoded } = await bytes(proxy, service);
            return wire > 0 && decoded === wire;
          },
          { diagnose: () => JSON.stringify(podReads(proxy).map((a) => a.answer)) },
        );
        expect(await service.json('/api/v1/reflector')).toMatchObject({
          initialList,
          watchListFallbacks: 0,
        });
      });
    });
  });
});
