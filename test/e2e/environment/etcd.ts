/**
 * One single-member etcd on free loopback ports with its own data folder, plus the things tests
 * need from it directly: its current revision, a physical compaction and deleting a key.
 *
 * They go through etcd's JSON gateway on the client port (`/v3/kv/range`, `/v3/kv/compaction`,
 * `/v3/kv/deleterange`),
 * the same gRPC calls etcdctl makes, so no etcdctl binary has to be built.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeLoopbackPort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';

/** Poll interval while waiting for etcd to answer /health. */
const readinessPollMs = 100;

export interface EtcdOptions {
  readonly binary: string;
  readonly stateDir: string;
  readonly pidDir: string;
  readonly readyTimeoutMs: number;
}

interface EtcdHeader {
  readonly header?: { readonly revision?: string };
}

interface EtcdError {
  readonly error?: string;
  readonly message?: string;
}

export class Etcd {
  readonly process: ManagedProcess;
  readonly clientUrl: string;
  readonly dataDir: string;
  readonly #readyTimeoutMs: number;

  private constructor(
    process: ManagedProcess,
    clientUrl: string,
    dataDir: string,
    readyTimeoutMs: number,
  ) {
    this.process = process;
    this.clientUrl = clientUrl;
    this.dataDir = dataDir;
    this.#readyTimeoutMs = readyTimeoutMs;
  }

  /** Starts etcd and resolves once it reports healthy. */
  static async start(options: EtcdOptions): Promise<Etcd> {
    const clientPort = await freeLoopbackPort();
    const peerPort = await freeLoopbackPort();
    const clientUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const dataDir = join(options.stateDir, 'etcd-data');
    const etcdProcess = new ManagedProcess({
      name: 'etcd',
      command: options.binary,
      args: [
        '--name=e2e',
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${clientUrl}`,
        `--advertise-client-urls=${clientUrl}`,
        // Explicit peer URLs: the default (localhost:2380) would collide between two environments.
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=e2e=${peerUrl}`,
        // Test data is thrown away; skipping fsync keeps writes fast on a shared, slow disk.
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      logFile: join(options.stateDir, 'etcd.log'),
      pidDir: options.pidDir,
    });
    etcdProcess.start();
    const etcd = new Etcd(etcdProcess, clientUrl, dataDir, options.readyTimeoutMs);
    await etcd.#waitHealthy(options.readyTimeoutMs);
    return etcd;
  }

  /** etcd's current revision: the newest resourceVersion the apiserver can have handed out. */
  async revision(): Promise<number> {
    // Any range request returns the store's revision in its header; the key need not exist.
    const reply = await this.#post<EtcdHeader>('/v3/kv/range', {
      key: Buffer.from('/pool-controller-e2e/revision-probe').toString('base64'),
      count_only: true,
    });
    const revision = Number(reply.header?.revision);
    if (!Number.isSafeInteger(revision)) {
      throw new Error(`e2e: etcd returned no revision: ${JSON.stringify(reply)}`);
    }
    return revision;
  }

  /**
   * Compacts physically up to the current revision, so every older revision is gone from the
   * store: a watch from an older resourceVersion that reaches etcd gets "compacted" (410 Gone).
   * Returns the revision compacted to. Compacting where the apiserver's own compactor already
   * did is not an error.
   */
  async compactToHead(): Promise<number> {
    const revision = await this.revision();
    try {
      await this.#post('/v3/kv/compaction', { revision: String(revision), physical: true });
    } catch (error) {
      if (!String(error).includes('required revision has been compacted')) throw error;
    }
    return revision;
  }

  /** Deletes one key (no range); resolves with how many keys were deleted (0 or 1). */
  async deleteKey(key: string): Promise<number> {
    const reply = await this.#post<{ deleted?: string }>('/v3/kv/deleterange', {
      key: Buffer.from(key).toString('base64'),
    });
    return Number(reply.deleted ?? 0);
  }

  /**
   * Stops etcd gracefully and starts it again with the same flags: same ports, same data folder,
   * so the apiserver's client reconnects to the same URL and finds every key and revision.
   */
  async restart(): Promise<void> {
    await this.process.stop();
    this.process.start();
    await this.#waitHealthy(this.#readyTimeoutMs);
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }

  async #post<T>(path: string, body: unknown): Promise<T> {
    const response = await fetch(`${this.clientUrl}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    const text = await response.text();
    if (!response.ok) {
      let detail = text;
      try {
        const parsed = JSON.parse(text) as EtcdError;
        detail = parsed.message ?? parsed.error ?? text;
      } catch {
        // not JSON; keep the text
      }
      throw new Error(`e2e: etcd ${path} failed (HTTP ${response.status}): ${detail}`);
    }
    return JSON.parse(text) as T;
  }

  async #waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let lastError = 'no answer yet';
    while (Date.now() < deadline) {
      if (this.process.exitStatus) break;
      try {
        const response = await fetch(`${this.clientUrl}/health`, {
          signal: AbortSignal.timeout(2_000),
        });
        const body = (await response.json()) as { health?: string };
        if (response.ok && body.health === 'true') return;
        lastError = `HTTP ${response.status} ${JSON.stringify(body)}`;
      } catch (error) {
        lastError = String(error);
      }
      await sleep(readinessPollMs);
    }
    const why = this.process.exitStatus
      ? 'exited before it became healthy'
      : `not healthy within ${timeoutMs} ms`;
    // Nothing else holds this process yet: stop it here or it would outlive the failure.
    await this.process.stop();
    throw new Error(
      `e2e: etcd at ${this.clientUrl} ${why} (${lastError})\n${this.process.describeFailure()}`,
    );
  }
}
