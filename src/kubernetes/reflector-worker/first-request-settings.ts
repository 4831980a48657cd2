/**
 * The main thread's half of ../client/request-snapshot.ts: the settings each reflector stream's
 * first request goes out with, so that the worker thread sends it without loading client-node and
 * reading the kubeconfig first (~17 ms off the path to the first LIST, docs/performance.md).
 *
 * One connection per source, made on the first stream and kept while the kubeconfig file is the
 * same: client-node keeps what credential plugins return until it expires (so a plugin does not run
 * on the main thread for every stream), and re-reads token and certificate files for each request
 * itself. A kubeconfig file rewritten since (a new server, a new inline token) is read again for
 * the next stream, as the worker did when it read the kubeconfig for every stream. A connection
 * that failed to be made is not kept: the next stream tries again.
 */
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { type Clock, realClock } from '../../runtime/clock.js';
import {
  type ApiConnection,
  type ClusterOptions,
  loadApiConnection,
} from '../client/connection.js';
import { type RequestSnapshot, snapshotRequest } from '../client/request-snapshot.js';

/**
 * How long a stream's start waits for its first request's settings before the task leaves
 * without them (the worker then reads the kubeconfig itself, as it did before this existed). The
 * worker thread takes ~40 ms to start; settings that take 25 times as long (a slow credential
 * plugin) are not worth holding the stream for, and the worker's own wait is bounded by its
 * request's timeout.
 */
export const FIRST_REQUEST_WAIT_MS = 1_000;

/** How the source gets a connection; tests pass one that counts or fails. */
type Connect = (cluster: ClusterOptions) => Promise<ApiConnection>;

/**
 * The kubeconfig file client-node reads for `cluster`: the one given, else the first of
 * `KUBECONFIG`, else `~/.kube/config` (in a pod with neither, the service account's files, which
 * client-node reads again for each request).
 */
function kubeconfigFile(cluster: ClusterOptions): string {
  if (cluster.kubeconfigPath) return cluster.kubeconfigPath;
  const fromEnvironment = process.env.KUBECONFIG?.split(delimiter).find((path) => path !== '');
  return fromEnvironment ?? join(homedir(), '.kube', 'config');
}

/** What says the file changed: its identity, size and modification time; '' when there is none. */
async function fileVersion(path: string): Promise<string> {
  try {
    const info = await stat(path);
    return `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}`;
  } catch {
    return '';
  }
}

/** The settings for the first request of each stream of one source. */
export class FirstRequestSettings {
  readonly #cluster: ClusterOptions;
  readonly #clock: Clock;
  readonly #connect: Connect;
  #connection: Promise<ApiConnection> | undefined;
  /** `fileVersion` of the kubeconfig when `#connection` was made. */
  #madeFrom = '';

  constructor(
    cluster: ClusterOptions,
    clock: Clock = realClock,
    connect: Connect = loadApiConnection,
  ) {
    this.#cluster = cluster;
    this.#clock = clock;
    this.#connect = connect;
  }

  /**
   * The next stream's first request's settings, or undefined when they cannot cross as data or be
   * had within `FIRST_REQUEST_WAIT_MS`, or when the kubeconfig fails: that error is the worker's to
   * report, in the stream's own terms, as it was before. Never rejects.
   */
  async next(): Promise<RequestSnapshot | undefined> {
    const giveUp = new AbortController();
    const timedOut = this.#clock.sleep(FIRST_REQUEST_WAIT_MS, giveUp.signal).then(
      () => undefined,
      () => undefined,
    );
    try {
      return await Promise.race([this.#snapshot(), timedOut]);
    } catch {
      return undefined;
    } finally {
      giveUp.abort();
    }
  }

  async #snapshot(): Promise<RequestSnapshot | undefined> {
    const version = await fileVersion(kubeconfigFile(this.#cluster));
    if (version !== this.#madeFrom) this.#connection = undefined;
    if (this.#connection === undefined) {
      this.#madeFrom = version;
      const connecting = this.#connect(this.#cluster);
      this.#connection = connecting;
      connecting.catch(() => {
        if (this.#connection === connecting) this.#connection = undefined;
      });
    }
    return snapshotRequest(await this.#connection);
  }
}
