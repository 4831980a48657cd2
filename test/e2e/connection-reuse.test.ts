/**
 * Connections to a real kube-apiserver over TLS are kept alive and reused: LIST pages, a watch
 * after them and Lease renewals each open one connection, not one per request (client-node's
 * `applyToHTTPSOptions` makes a new agent, so a new TLS handshake, for every request). New TLS
 * connections are counted on the client side, from the shared agent's `keylog` events; HTTP/2
 * sessions from Node's `http2.client.stream.created` diagnostics channel.
 */
import diagnostics from 'node:diagnostics_channel';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { Agent } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiConnection, loadApiConnection } from '../../src/kubernetes/client/connection.js';
import { connectPodApi, HttpPodApi } from '../../src/kubernetes/resources/http-pod-api.js';
import { KubernetesLeaseLock } from '../../src/kubernetes/resources/lease-lock.js';
import { type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { PodWriter, podManifest } from './support-reflector.js';

let env: KubeEnvironment;
beforeAll(async () => {
  env = await startKubeEnvironment({ watchCache: true });
});
afterAll(async () => {
  await env?.stop();
});

/** Counts the TLS connections the connection's shared agent opens from now on. */
async function countHandshakes(connection: ApiConnection): Promise<() => number> {
  const agent = (await connection.requestOptions()).agent as Agent;
  const sockets = new Set<TLSSocket>();
  agent.on('keylog', (_line: Buffer, socket: TLSSocket) => sockets.add(socket));
  return () => sockets.size;
}

/** Records the HTTP/2 sessions that streams open on from now on, until the returned stop. */
function recordHttp2Sessions(): {
  sessions: Set<ClientHttp2Session>;
  streams: () => number;
  stop: () => void;
} {
  const sessions = new Set<ClientHttp2Session>();
  let streams = 0;
  const onStream = (message: unknown): void => {
    const { stream } = message as { stream: ClientHttp2Stream };
    streams += 1;
    sessions.add(stream.session as ClientHttp2Session);
  };
  diagnostics.subscribe('http2.client.stream.created', onStream);
  return {
    sessions,
    streams: () => streams,
    stop: () => diagnostics.unsubscribe('http2.client.stream.created', onStream),
  };
}

describe('connections to the API server', () => {
  it('reads LIST pages and a watch-list as streams of one HTTP/2 connection by default', async () => {
    const namespace = await env.createNamespace('reuse-h2');
    const writer = new PodWriter(env.kubeConfig, namespace);
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      await writer.core.createNamespacedPod({ namespace, body: podManifest(name, {}) });
    }
    const recorded = recordHttp2Sessions();
    try {
      const api = await connectPodApi({ kubeconfigPath: env.kubeconfigPath });
      const paged = await api.listPods({
        namespace,
        limit: 2,
        signal: AbortSignal.timeout(20_000),
      });
      expect(paged.pods).toHaveLength(5);
      const stream = await api.watchPods({
        namespace,
        resourceVersion: '',
        sendInitialEvents: true,
        timeoutSeconds: 30,
        signal: AbortSignal.timeout(20_000),
      });
      stream.close();
      expect(recorded.streams()).toBe(4);
      expect(recorded.sessions.size).toBe(1);
      const [session] = recorded.sessions;
      expect(session?.alpnProtocol).toBe('h2');
    } finally {
      recorded.stop();
    }
  });

  it('with HTTP/2 turned off, opens no HTTP/2 stream', async () => {
    const namespace = await env.createNamespace('reuse-h1');
    const recorded = recordHttp2Sessions();
    try {
      const api = await connectPodApi({ kubeconfigPath: env.kubeconfigPath, apiHttp2: false });
      await api.listPods({ namespace, signal: AbortSignal.timeout(20_000) });
      expect(recorded.streams()).toBe(0);
    } finally {
      recorded.stop();
    }
  });

  it('reads LIST pages one after another, then watches, over one TLS connection', async () => {
    const namespace = await env.createNamespace('reuse');
    const writer = new PodWriter(env.kubeConfig, namespace);
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      await writer.core.createNamespacedPod({ namespace, body: podManifest(name, {}) });
    }
    const connection = await loadApiConnection({ kubeconfigPath: env.kubeconfigPath });
    const handshakes = await countHandshakes(connection);
    const api = new HttpPodApi(connection, 'protobuf');
    let resourceVersion = '';
    for (let i = 0; i < 3; i += 1) {
      const list = await api.listPods({ namespace, signal: AbortSignal.timeout(20_000) });
      expect(list.pods).toHaveLength(5);
      resourceVersion = list.resourceVersion;
    }
    const stream = await api.watchPods({
      namespace,
      resourceVersion,
      timeoutSeconds: 30,
      signal: AbortSignal.timeout(20_000),
    });
    stream.close();
    expect(handshakes()).toBe(1);

    // Pages requested ahead of need run side by side: one connection each, at most three.
    const paged = await api.listPods({ namespace, limit: 1, signal: AbortSignal.timeout(20_000) });
    expect(paged.pods).toHaveLength(5);
    expect(handshakes()).toBeLessThanOrEqual(3);
  });

  it('renews a Lease over one TLS connection', async () => {
    const namespace = await env.createNamespace('reuse-lease');
    const connection = await loadApiConnection({ kubeconfigPath: env.kubeconfigPath });
    const handshakes = await countHandshakes(connection);
    const lock = new KubernetesLeaseLock({ connection, namespace, name: 'leader' });
    const signal = AbortSignal.timeout(20_000);
    const record = {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-12-01T00:00:00.000000Z',
      renewTime: '2026-12-01T00:00:00.000000Z',
      leaseTransitions: 0,
    };
    let lease = await lock.create(record, signal);
    for (let i = 1; i <= 5; i += 1) {
      const current = await lock.get(signal);
      expect(current?.resourceVersion).toBe(lease.resourceVersion);
      const renewTime = `2026-12-01T00:00:0${i}.000000Z`;
      lease = await lock.update({ ...record, renewTime }, lease.resourceVersion, signal);
    }
    expect(lease.record.renewTime).toBe('2026-12-01T00:00:05.000000Z');
    expect(handshakes()).toBe(1);
  });
});
