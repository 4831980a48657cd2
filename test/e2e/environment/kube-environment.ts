/**
 * A real Kubernetes API server for e2e tests: etcd plus kube-apiserver, started by the test that
 * needs them, with no controller-manager, scheduler or kubelet (see kubelet.ts for pod status).
 *
 * Usage, one environment per test file (e2e files run one at a time):
 *
 *   let env: KubeEnvironment;
 *   beforeAll(async () => { env = await startKubeEnvironment({ watchCache: false }); });
 *   afterAll(async () => { await env?.stop(); });
 *   it('...', async () => {
 *     const namespace = await env.createNamespace();
 *     const core = env.kubeConfig.makeApiClient(CoreV1Api);
 *     ...
 *   });
 *
 * `watchCache: true` is a production-like apiserver; `watchCache: false` is the one on which a
 * stale resourceVersion gets a real 410 Gone after `compactEtcdToHead()` (with the cache on, the
 * apiserver still serves compacted versions from memory). Each environment has its own etcd, so
 * compacting or restarting never disturbs another.
 *
 * `stop()` kills everything and removes the temp folder, logging (not throwing) cleanup errors.
 * If the test process dies first, a reaper process kills what is left. `POOL_K8S_KEEP=1` leaves the
 * environment running and prints how to reach it. This module depends on nothing else in the
 * project, so it can be verified (environment self-tests) before anything uses it.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Apiserver } from './apiserver.js';
import { ensureKubeBinaries, recipeDir } from './binaries.js';
import { adminUser, type Credentials, unprivilegedUser, writeCredentials } from './credentials.js';
import { Etcd } from './etcd.js';

/**
 * How long etcd and the apiserver get to become ready. Cold starts take a few seconds; the margin
 * is for a 2-core machine shared with builds and other test runs. `POOL_K8S_READY_TIMEOUT_MS`
 * overrides it.
 */
export const defaultReadyTimeoutMs = 120_000;

export interface KubeEnvironmentOptions {
  /** true: the apiserver serves watches and lists from its cache; false: every read goes to etcd. */
  readonly watchCache: boolean;
  /** Extra kube-apiserver flags, appended last so they override the defaults. */
  readonly apiserverArgs?: readonly string[];
  readonly readyTimeoutMs?: number;
}

/** A user the apiserver knows by static token, with its own kubeconfig. */
export interface KubeUser {
  readonly user: string;
  readonly token: string;
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
}

export interface KubeEnvironment {
  /** `watch-cache` or `no-watch-cache`, used in messages and kubeconfig names. */
  readonly name: string;
  readonly watchCache: boolean;
  /** The apiserver's URL, e.g. https://127.0.0.1:41234; unchanged by restartApiserver(). */
  readonly server: string;
  /** Kubeconfig of the admin user (group system:masters), as a file and loaded. */
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  /** The admin user's bearer token. */
  readonly token: string;
  /** The CA that signs the serving certificate (PEM file), for clients built by hand. */
  readonly caPath: string;
  /**
   * The key of that certificate (127.0.0.1 and localhost): what a webhook server the apiserver
   * calls on loopback serves with, so the apiserver trusts it with `caPath` as its caBundle.
   */
  readonly servingKeyPath: string;
  /** A user RBAC grants nothing until a test binds a Role to it. */
  readonly unprivileged: KubeUser;
  /** etcd's client URL (http, loopback). */
  readonly etcdUrl: string;
  /** Temp folder with certificates, kubeconfigs, etcd data and the process logs. */
  readonly stateDir: string;
  /** Creates a namespace with a fresh name (prefix plus random suffix) and returns its name. */
  createNamespace(prefix?: string): Promise<string>;
  /** Stops the apiserver and starts it again on the same port with the same etcd data. */
  restartApiserver(): Promise<void>;
  /** Stops the apiserver (gracefully) and leaves it stopped: an outage, until `startApiserver()`. */
  stopApiserver(): Promise<void>;
  /** Starts the stopped apiserver again (same port, etcd data); resolves once /readyz is ok. */
  startApiserver(): Promise<void>;
  /**
   * Deletes a pod's object in etcd, behind the apiserver's back: what another apiserver of an HA
   * control plane would do while this one is stopped. Resolves with whether the pod was there.
   */
  deletePodInEtcd(namespace: string, name: string): Promise<boolean>;
  /** Stops etcd and starts it again on the same ports with the same data; the apiserver stays up. */
  restartEtcd(): Promise<void>;
  /** etcd's current revision (the newest resourceVersion the apiserver can have issued). */
  etcdRevision(): Promise<number>;
  /** Physically compacts etcd at its current revision and returns that revision. */
  compactEtcdToHead(): Promise<number>;
  /** The last lines of the etcd and apiserver logs, for failure messages. */
  logTails(): string;
  /** Stops everything (or, with POOL_K8S_KEEP=1, prints how to reach it). Never throws. */
  stop(): Promise<void>;
}

function keepRequested(): boolean {
  return process.env.POOL_K8S_KEEP === '1';
}

function readyTimeout(options: KubeEnvironmentOptions): number {
  const fromEnv = Number(process.env.POOL_K8S_READY_TIMEOUT_MS);
  if (Number.isFinite(fromEnv) && fromEnv > 0) return fromEnv;
  return options.readyTimeoutMs ?? defaultReadyTimeoutMs;
}

function writeKubeconfig(
  path: string,
  name: string,
  server: string,
  credentials: Credentials,
  user: string,
  token: string,
): KubeConfig {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server,
          'certificate-authority-data': readFileSync(credentials.caFile).toString('base64'),
        },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name, context: { cluster: name, user } }],
    'current-context': name,
  };
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}

function startReaper(stateDir: string, pidDir: string): ChildProcess {
  const reaper = spawn(
    process.execPath,
    [join(recipeDir, 'reaper.mjs'), String(process.pid), pidDir, stateDir],
    { detached: true, stdio: 'ignore' },
  );
  reaper.unref();
  return reaper;
}

/**
 * Starts etcd and one kube-apiserver (building the binaries first if they are missing) and
 * resolves once both are ready. On failure everything started is stopped and the error carries
 * the tail of each process's log.
 */
export async function startKubeEnvironment(
  options: KubeEnvironmentOptions,
): Promise<KubeEnvironment> {
  const binaries = ensureKubeBinaries();
  const name = options.watchCache ? 'watch-cache' : 'no-watch-cache';
  const keep = keepRequested();
  const timeoutMs = readyTimeout(options);
  const stateDir = mkdtempSync(join(tmpdir(), `pool-k8s-${name}-`));
  const pidDir = join(stateDir, 'pids');
  mkdirSync(pidDir);
  const reaper = keep ? undefined : startReaper(stateDir, pidDir);
  let credentials: Credentials | undefined;
  let etcd: Etcd | undefined;
  let apiserver: Apiserver | undefined;
  const cleanup = async (): Promise<void> => {
    for (const [what, stop] of [
      ['kube-apiserver', () => apiserver?.stop()],
      ['etcd', () => etcd?.stop()],
    ] as const) {
      try {
        await stop();
      } catch (error) {
        console.warn(`e2e ${name}: stopping ${what} failed (ignored): ${error}`);
      }
    }
    try {
      if (reaper?.pid !== undefined) process.kill(reaper.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    try {
      rmSync(stateDir, { recursive: true, force: true });
    } catch (error) {
      console.warn(`e2e ${name}: removing ${stateDir} failed (ignored): ${error}`);
    }
  };

  try {
    credentials = writeCredentials(stateDir);
    etcd = await Etcd.start({ binary: binaries.etcd, stateDir, pidDir, readyTimeoutMs: timeoutMs });
    apiserver = await Apiserver.start({
      binary: binaries.kubeApiserver,
      stateDir,
      pidDir,
      etcdUrl: etcd.clientUrl,
      credentials,
      watchCache: options.watchCache,
      readyTimeoutMs: timeoutMs,
      ...(options.apiserverArgs ? { extraArgs: options.apiserverArgs } : {}),
    });
  } catch (error) {
    const tails = [etcd?.process, apiserver?.process]
      .filter((p) => p !== undefined)
      .map((p) => p.describeFailure())
      .join('\n');
    console.error(`e2e ${name}: environment failed to start: ${error}\n${tails}`);
    await cleanup();
    throw error;
  }

  const startedCredentials = credentials;
  const startedEtcd = etcd;
  const startedApiserver = apiserver;
  const server = startedApiserver.url;
  const kubeconfigPath = join(stateDir, 'kubeconfig.json');
  const kubeConfig = writeKubeconfig(
    kubeconfigPath,
    `pool-e2e-${name}`,
    server,
    startedCredentials,
    adminUser,
    startedCredentials.adminToken,
  );
  const unprivilegedPath = join(stateDir, 'kubeconfig-unprivileged.json');
  const unprivileged: KubeUser = {
    user: unprivilegedUser,
    token: startedCredentials.unprivilegedToken,
    kubeconfigPath: unprivilegedPath,
    kubeConfig: writeKubeconfig(
      unprivilegedPath,
      `pool-e2e-${name}`,
      server,
      startedCredentials,
      unprivilegedUser,
      startedCredentials.unprivilegedToken,
    ),
  };
  const core = kubeConfig.makeApiClient(CoreV1Api);

  const howToReach = (): string =>
    [
      `e2e ${name}: POOL_K8S_KEEP=1, leaving kube-apiserver ${binaries.kubernetesVersion} ` +
        `(watch cache ${options.watchCache ? 'on' : 'off'}) and etcd ${binaries.etcdVersion} running:`,
      `  export KUBECONFIG=${kubeconfigPath}`,
      `  curl --cacert ${startedCredentials.caFile} -H 'Authorization: Bearer ${startedCredentials.adminToken}' ${server}/api/v1/namespaces`,
      `  etcd: ${startedEtcd.clientUrl}   logs and data: ${stateDir}`,
      `  stop it: kill -KILL -- -${startedApiserver.process.pid} -${startedEtcd.process.pid}; rm -rf ${stateDir}`,
    ].join('\n');
  if (keep) console.log(howToReach());

  let stopped = false;
  return {
    name,
    watchCache: options.watchCache,
    server,
    kubeconfigPath,
    kubeConfig,
    token: startedCredentials.adminToken,
    caPath: startedCredentials.caFile,
    servingKeyPath: startedCredentials.keyFile,
    unprivileged,
    etcdUrl: startedEtcd.clientUrl,
    stateDir,
    async createNamespace(prefix = 'e2e') {
      const namespace = `${prefix}-${randomBytes(4).toString('hex')}`;
      await core.createNamespace({ body: { metadata: { name: namespace } } });
      return namespace;
    },
    async restartApiserver() {
      await startedApiserver.restart();
    },
    async stopApiserver() {
      await startedApiserver.stop();
    },
    async startApiserver() {
      await startedApiserver.startAgain();
    },
    async deletePodInEtcd(namespace, name) {
      // The apiserver's default --etcd-prefix (/registry) and its key layout for namespaced kinds.
      return (await startedEtcd.deleteKey(`/registry/pods/${namespace}/${name}`)) === 1;
    },
    async restartEtcd() {
      await startedEtcd.restart();
    },
    etcdRevision: () => startedEtcd.revision(),
    compactEtcdToHead: () => startedEtcd.compactToHead(),
    logTails: () =>
      `${startedEtcd.process.describeFailure()}\n${startedApiserver.process.describeFailure()}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (keep) {
        console.log(howToReach());
        return;
      }
      await cleanup();
    },
  };
}
