import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { describe, expect, it } from 'vitest';
import {
  type ApiConnection,
  type ClusterOptions,
  loadApiConnection,
} from '../../src/kubernetes/client/connection.js';
import {
  connectionFromSnapshot,
  snapshotRequest,
} from '../../src/kubernetes/client/request-snapshot.js';
import { goesDirectOverTls, sameMaterial } from '../../src/kubernetes/client/shared-agents.js';
import { writeTokenKubeconfig } from '../support/token-kubeconfig.js';

const CA_DATA = Buffer.from('-----BEGIN CERTIFICATE-----\nnot really one\n').toString('base64');

/** What a snapshot looks like on the other side of a `postMessage`. */
function crossed<T>(value: T): T {
  return structuredClone(value);
}

/** A `connect` that records its calls and hands out real connections. */
function countingConnect(): {
  connect: (cluster: ClusterOptions) => Promise<ApiConnection>;
  calls: ClusterOptions[];
} {
  const calls: ClusterOptions[] = [];
  return {
    calls,
    connect: (cluster) => {
      calls.push(cluster);
      return loadApiConnection(cluster);
    },
  };
}

describe('request snapshots: a stream’s first request resolved on another thread', () => {
  it('carries the server, the headers and the TLS material across a structured clone', async () => {
    const cluster = {
      kubeconfigPath: writeTokenKubeconfig('token-one', [
        'server: https://127.0.0.1:6443',
        `certificate-authority-data: ${CA_DATA}`,
        'tls-server-name: api.cluster.test',
      ]),
    };
    const connection = await loadApiConnection(cluster);
    const snapshot = crossed(await snapshotRequest(connection));
    expect(snapshot).toMatchObject({
      server: 'https://127.0.0.1:6443',
      scheme: 'https',
      headers: { Authorization: 'Bearer token-one' },
      material: { servername: 'api.cluster.test' },
    });

    const { connect, calls } = countingConnect();
    const restored = await connectionFromSnapshot(
      snapshot as NonNullable<typeof snapshot>,
      cluster,
      connect,
    ).requestOptions();
    // The same request as the connection itself prepares, over a shared TLS agent, without the
    // kubeconfig being read on this side.
    expect(calls).toEqual([]);
    expect(restored.headers).toEqual({ Authorization: 'Bearer token-one' });
    expect(Buffer.isBuffer(restored.ca)).toBe(true);
    expect(goesDirectOverTls(restored)).toBe(true);
    const prepared = await connection.requestOptions();
    expect(sameMaterial(restored as never, prepared as never)).toBe(true);
  });

  it('asks the connection it makes for every request after the first, reading the kubeconfig again', async () => {
    const kubeconfigPath = writeTokenKubeconfig('read-by-the-main-thread', [
      'server: https://127.0.0.1:6443',
    ]);
    const snapshot = await snapshotRequest(await loadApiConnection({ kubeconfigPath }));
    // The credentials rotate after the main thread read them.
    writeFileSync(
      kubeconfigPath,
      readFileSync(kubeconfigPath, 'utf8').replace('read-by-the-main-thread', 'rotated'),
    );
    const { connect, calls } = countingConnect();
    const connection = connectionFromSnapshot(
      crossed(snapshot as NonNullable<typeof snapshot>),
      { kubeconfigPath },
      connect,
    );
    const authorization = async () =>
      ((await connection.requestOptions()).headers as Record<string, string>).Authorization;
    expect(await authorization()).toBe('Bearer read-by-the-main-thread');
    expect(await authorization()).toBe('Bearer rotated');
    expect(await authorization()).toBe('Bearer rotated');
    expect(calls).toEqual([{ kubeconfigPath }]);
  });

  it('fails only the request whose connection could not be made, and tries again for the next', async () => {
    const kubeconfigPath = writeTokenKubeconfig('t', ['server: https://127.0.0.1:6443']);
    const snapshot = await snapshotRequest(await loadApiConnection({ kubeconfigPath }));
    let attempts = 0;
    const connection = connectionFromSnapshot(
      snapshot as NonNullable<typeof snapshot>,
      { kubeconfigPath },
      (cluster) => {
        attempts += 1;
        return attempts === 1
          ? Promise.reject(new Error('kubeconfig unreadable'))
          : loadApiConnection(cluster);
      },
    );
    await connection.requestOptions();
    await expect(connection.requestOptions()).rejects.toThrow('kubeconfig unreadable');
    expect((await connection.requestOptions()).headers).toMatchObject({
      Authorization: 'Bearer t',
    });
    expect(attempts).toBe(2);
  });

  it('gives a plain-http server’s settings over a plain agent', async () => {
    const kubeconfigPath = writeTokenKubeconfig('t', [
      'server: http://127.0.0.1:8080',
      'insecure-skip-tls-verify: true',
    ]);
    const snapshot = await snapshotRequest(await loadApiConnection({ kubeconfigPath }));
    expect(snapshot).toMatchObject({ scheme: 'http', material: { rejectUnauthorized: false } });
    const restored = await connectionFromSnapshot(
      crossed(snapshot as NonNullable<typeof snapshot>),
      { kubeconfigPath },
      loadApiConnection,
    ).requestOptions();
    expect(restored.agent).not.toBeInstanceOf(https.Agent);
    expect(goesDirectOverTls(restored)).toBe(false);
  });

  it('gives none for requests through a proxy, whose agent cannot cross', async () => {
    const connection = await loadApiConnection({
      kubeconfigPath: writeTokenKubeconfig('t', [
        'server: https://127.0.0.1:6443',
        'proxy-url: http://127.0.0.1:3128',
      ]),
    });
    expect(await snapshotRequest(connection)).toBeUndefined();
  });

  it('gives none for options it does not know, rather than dropping them', async () => {
    const connection: ApiConnection = {
      server: 'https://127.0.0.1:6443',
      requestOptions: async () => {
        const kubeconfigPath = writeTokenKubeconfig('t', ['server: https://127.0.0.1:6443']);
        const prepared = await (await loadApiConnection({ kubeconfigPath })).requestOptions();
        return { ...prepared, localAddress: '127.0.0.2' };
      },
    };
    expect(await snapshotRequest(connection)).toBeUndefined();
  });
});
