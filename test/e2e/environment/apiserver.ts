/**
 * One kube-apiserver on a free loopback port, backed by one etcd, with no controller-manager,
 * scheduler or kubelet — the layer envtest and Kubernetes' integration tests use.
 *
 * Flags that matter, and why:
 * - `--watch-cache=false` on one of the two environments: with the cache on, the apiserver serves
 *   a watch from a compacted resourceVersion out of memory, so only the cache-off server can give
 *   a stale cursor a real 410 Gone.
 * - `--disable-admission-plugins=ServiceAccount`: that plugin rejects pods until a controller
 *   creates the namespace's `default` service account, and none runs here.
 * - `--authorization-mode=RBAC`: the admin token is in `system:masters` (always allowed), while the
 *   unprivileged token is subject to RBAC like the controller's service account would be.
 * - `--endpoint-reconciler-type=none`: a loopback advertise address is not a valid Endpoints IP,
 *   and nothing here needs the `kubernetes` service's endpoints.
 * Restarting keeps the port, certificates and etcd, so clients reconnect to the same URL.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Credentials } from './credentials.js';
import { freeLoopbackPort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';

/** Poll interval while waiting for /readyz. */
const readinessPollMs = 250;
/** Service IPs are only allocated, never routed, so any private range works. */
const serviceClusterIpRange = '10.0.0.0/24';

export interface ApiserverOptions {
  readonly binary: string;
  readonly stateDir: string;
  readonly pidDir: string;
  readonly etcdUrl: string;
  readonly credentials: Credentials;
  readonly watchCache: boolean;
  readonly readyTimeoutMs: number;
  /** Extra flags appended last, so they override the defaults above. */
  readonly extraArgs?: readonly string[];
}

export class Apiserver {
  readonly process: ManagedProcess;
  readonly port: number;
  readonly url: string;
  readonly #options: ApiserverOptions;
  readonly #ca: Buffer;

  private constructor(options: ApiserverOptions, port: number) {
    this.#options = options;
    this.port = port;
    this.url = `https://127.0.0.1:${port}`;
    this.#ca = readFileSync(options.credentials.caFile);
    const c = options.credentials;
    this.process = new ManagedProcess({
      name: 'kube-apiserver',
      command: options.binary,
      args: [
        `--etcd-servers=${options.etcdUrl}`,
        `--secure-port=${port}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--tls-cert-file=${c.certFile}`,
        `--tls-private-key-file=${c.keyFile}`,
        // Unused with explicit serving certs, but keeps the default (/var/run/kubernetes) out of it.
        `--cert-dir=${join(options.stateDir, 'apiserver-certs')}`,
        `--token-auth-file=${c.tokenFile}`,
        '--authorization-mode=RBAC',
        `--service-account-issuer=${this.url}`,
        `--service-account-key-file=${c.serviceAccountPublicKeyFile}`,
        `--service-account-signing-key-file=${c.serviceAccountPrivateKeyFile}`,
        `--service-cluster-ip-range=${serviceClusterIpRange}`,
        '--disable-admission-plugins=ServiceAccount',
        '--endpoint-reconciler-type=none',
        `--watch-cache=${options.watchCache}`,
        '--allow-privileged=true',
        '--profiling=false',
        // On shutdown, end open HTTP/1.1 watches within seconds (with a Retry-After) instead of
        // serving them until the request timeout: a restart with a watch open then takes ~6 s,
        // not ~22 s.
        '--shutdown-send-retry-after=true',
        ...(options.extraArgs ?? []),
      ],
      logFile: join(options.stateDir, 'kube-apiserver.log'),
      pidDir: options.pidDir,
    });
  }

  /** Starts the apiserver on a free port and resolves once /readyz answers ok. */
  static async start(options: ApiserverOptions): Promise<Apiserver> {
    const apiserver = new Apiserver(options, await freeLoopbackPort());
    await apiserver.#startAndWait();
    return apiserver;
  }

  /** Stops gracefully and starts again with the same flags: same port, certificates and etcd. */
  async restart(): Promise<void> {
    await this.process.stop();
    await this.#startAndWait();
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }

  /**
   * Starts it again after `stop()`, with the same flags (same port, certificates and etcd), and
   * resolves once /readyz answers ok: the second half of a restart with an outage in between.
   */
  async startAgain(): Promise<void> {
    await this.#startAndWait();
  }

  async #startAndWait(): Promise<void> {
    this.process.start();
    const deadline = Date.now() + this.#options.readyTimeoutMs;
    let last = 'no answer yet';
    while (Date.now() < deadline) {
      if (this.process.exitStatus) break;
      const answer = await this.#readyz();
      if (answer.status === 200) return;
      last = answer.detail;
      await sleep(readinessPollMs);
    }
    const why = this.process.exitStatus
      ? 'exited before it became ready'
      : `not ready within ${this.#options.readyTimeoutMs} ms`;
    // Nothing else holds this process yet: stop it here or it would outlive the failure.
    await this.process.stop();
    throw new Error(
      `e2e: kube-apiserver at ${this.url} ${why} (last /readyz: ${last})\n` +
        this.process.describeFailure(),
    );
  }

  #readyz(): Promise<{ status: number; detail: string }> {
    const token = this.#options.credentials.adminToken;
    return new Promise((resolve) => {
      const req = request(
        `${this.url}/readyz`,
        {
          ca: this.#ca,
          headers: { authorization: `Bearer ${token}` },
          timeout: 2_000,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            body += chunk;
          });
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            resolve({
              status,
              detail: `HTTP ${status} ${body.trim().split('\n').slice(-3).join(' ')}`,
            });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (error) => resolve({ status: 0, detail: error.message }));
      req.end();
    });
  }
}
