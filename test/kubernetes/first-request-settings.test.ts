import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type ApiConnection,
  type ClusterOptions,
  KubeConfigError,
  loadApiConnection,
} from '../../src/kubernetes/client/connection.js';
import {
  FIRST_REQUEST_WAIT_MS,
  FirstRequestSettings,
} from '../../src/kubernetes/reflector-worker/first-request-settings.js';
import { FakeClock } from '../support/fake-clock.js';
import { writeTokenKubeconfig } from '../support/token-kubeconfig.js';

function kubeconfigWithToken(token: string): ClusterOptions {
  return { kubeconfigPath: writeTokenKubeconfig(token, ['server: https://127.0.0.1:6443']) };
}

describe('FirstRequestSettings: each stream’s first request, resolved on the main thread', () => {
  it('reads the kubeconfig once for all of a source’s streams, and resolves credentials for each', async () => {
    const cluster = kubeconfigWithToken('secret-token');
    const connected: ClusterOptions[] = [];
    let resolved = 0;
    const settings = new FirstRequestSettings(cluster, new FakeClock(), async (options) => {
      connected.push(options);
      const connection = await loadApiConnection(options);
      return {
        server: connection.server,
        requestOptions: () => {
          resolved += 1;
          return connection.requestOptions();
        },
      };
    });
    for (let stream = 0; stream < 3; stream += 1) {
      expect(await settings.next()).toMatchObject({
        server: 'https://127.0.0.1:6443',
        headers: { Authorization: 'Bearer secret-token' },
      });
    }
    expect(connected).toEqual([cluster]);
    expect(resolved).toBe(3);
  });

  it('reads the kubeconfig again for the next stream once the file was rewritten', async () => {
    const cluster = kubeconfigWithToken('before-the-rewrite');
    const path = cluster.kubeconfigPath as string;
    let connects = 0;
    const settings = new FirstRequestSettings(cluster, new FakeClock(), (options) => {
      connects += 1;
      return loadApiConnection(options);
    });
    const token = async () => (await settings.next())?.headers.Authorization;
    expect(await token()).toBe('Bearer before-the-rewrite');
    writeFileSync(path, readFileSync(path, 'utf8').replace('before-the-rewrite', 'rewritten'));
    // A modification time of its own, whatever the file system's clock resolution.
    utimesSync(path, new Date(2_000_000_000_000), new Date(2_000_000_000_000));
    expect(await token()).toBe('Bearer rewritten');
    expect(await token()).toBe('Bearer rewritten');
    expect(connects).toBe(2);
  });

  it('gives none when the kubeconfig fails, leaving the error to the worker, and tries again next time', async () => {
    const cluster = kubeconfigWithToken('t');
    let attempts = 0;
    const settings = new FirstRequestSettings(cluster, new FakeClock(), (options) => {
      attempts += 1;
      return attempts === 1
        ? Promise.reject(new KubeConfigError('cannot read kubeconfig'))
        : loadApiConnection(options);
    });
    expect(await settings.next()).toBeUndefined();
    expect(await settings.next()).toMatchObject({ headers: { Authorization: 'Bearer t' } });
    expect(attempts).toBe(2);
  });

  it('gives none once FIRST_REQUEST_WAIT_MS has passed without credentials (a hung plugin)', async () => {
    const clock = new FakeClock();
    const hung: ApiConnection = {
      server: 'https://127.0.0.1:6443',
      requestOptions: () => new Promise(() => {}),
    };
    const settings = new FirstRequestSettings(kubeconfigWithToken('t'), clock, async () => hung);
    let settled = false;
    const next = settings.next().then((value) => {
      settled = true;
      return value;
    });
    await clock.advance(FIRST_REQUEST_WAIT_MS - 1);
    expect(settled).toBe(false);
    await clock.advance(1);
    expect(await next).toBeUndefined();
    expect(clock.pendingTimers).toBe(0);
  });

  it('leaves no timer behind when the credentials come in time', async () => {
    const clock = new FakeClock();
    const settings = new FirstRequestSettings(kubeconfigWithToken('t'), clock);
    expect(await settings.next()).toBeDefined();
    expect(clock.pendingTimers).toBe(0);
  });
});
