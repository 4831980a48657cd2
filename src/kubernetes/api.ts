/**
 * The LIST/WATCH adapter the reflector talks to, and the one place that reads cluster
 * configuration.
 *
 * This is the only module that imports `@kubernetes/client-node`, and only lazily (a dynamic
 * import inside `connectPodApi`), so the runtime, the pool domain and every test that uses a fake
 * `PodApi` load without it. client-node is used for what it is good at — kubeconfig, in-cluster
 * service accounts, exec/OIDC/token-file auth, TLS — while the requests themselves go over plain
 * `node:http(s)` (./http-pod-api.ts), so the reflector controls bytes, decoding and closing.
 */
import type { RequestOptions } from 'node:https';
import { HttpPodApi } from './http-pod-api.js';
import type { Pod } from './pod.js';
import type { WatchFrame } from './watch-frames.js';

export type { WatchFrame } from './watch-frames.js';

export interface ListPodsOptions {
  /** Undefined or `''`: all namespaces. */
  namespace?: string;
  labelSelector?: string;
  /** Page size; the adapter follows `continue` until the collection is complete. */
  limit?: number;
  signal: AbortSignal;
  /** Hears every chunk of response bytes: for stats and the reflector's idle detection. */
  onBytes?: (count: number) => void;
}

/** A complete, validated collection: every page read, every item a readable pod. */
export interface PodList {
  pods: Pod[];
  /** The collection's resourceVersion: where a WATCH continues from. */
  resourceVersion: string;
}

export interface WatchPodsOptions {
  namespace?: string;
  labelSelector?: string;
  resourceVersion: string;
  /** Always sent: the server ends the watch cleanly after this long, and the reflector reconnects. */
  timeoutSeconds: number;
  /** Aborting closes the connection and makes a pending read reject with the signal's reason. */
  signal: AbortSignal;
  onBytes?: (count: number) => void;
}

/**
 * An open WATCH. Iterate it once for frames; a clean end of iteration is the server's timeout.
 * `close()` releases the connection at any point and is idempotent, so the reflector can close
 * on every path without tracking whether iteration already did.
 */
export interface WatchStream extends AsyncIterable<WatchFrame> {
  close(): void;
}

/**
 * What the reflector needs from the API server. `watchPods` resolves once the server accepted the
 * WATCH (HTTP 200) and rejects with `ApiStatusError` when it did not, so "the watch is open" (the
 * reflector is healthy) is a fact rather than a guess from the first frame, which on a quiet
 * namespace may be a minute away.
 */
export interface PodApi {
  listPods(options: ListPodsOptions): Promise<PodList>;
  watchPods(options: WatchPodsOptions): Promise<WatchStream>;
}

/** Where to find the cluster. Plain strings, so they cross to the worker thread. */
export interface ClusterOptions {
  /** A kubeconfig file; else client-node's `loadFromDefault`: KUBECONFIG, ~/.kube/config, in-cluster. */
  kubeconfigPath?: string;
  /** A context of that kubeconfig; else its current-context. */
  context?: string;
}

/** The configuration cannot reach any cluster: permanent until someone fixes the flags. */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/** How HTTP requests reach the API server: its base URL, and fresh auth/TLS options per request. */
export interface ApiConnection {
  server: string;
  /**
   * Called before every request, because tokens rotate (in-cluster token files, exec plugins) and
   * client-node refreshes them in here.
   */
  requestOptions(): Promise<RequestOptions>;
}

/** client-node's `loadFromDefault` ends here when it found nothing at all. */
const FALLBACK_CONTEXT = 'loaded-context';
const FALLBACK_SERVER = 'http://localhost:8080';

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Starts loading the Kubernetes client without waiting for it: the reflector's worker thread
 * calls this while idle, so its first stream does not pay for a large module graph. A failure is
 * ignored here and reported by the first call that needs the client.
 */
export function preloadClientNode(): void {
  void import('@kubernetes/client-node').catch(() => undefined);
}

/** Reads the kubeconfig (or in-cluster config) into a connection; throws `KubeConfigError`. */
export async function loadApiConnection(options: ClusterOptions = {}): Promise<ApiConnection> {
  let clientNode: typeof import('@kubernetes/client-node');
  try {
    clientNode = await import('@kubernetes/client-node');
  } catch (error) {
    throw new KubeConfigError(`cannot load @kubernetes/client-node: ${message(error)}`);
  }
  const config = new clientNode.KubeConfig();
  try {
    if (options.kubeconfigPath) config.loadFromFile(options.kubeconfigPath);
    else config.loadFromDefault();
  } catch (error) {
    throw new KubeConfigError(
      `cannot read kubeconfig ${options.kubeconfigPath ?? '(KUBECONFIG or ~/.kube/config)'}: ${message(error)}`,
    );
  }
  if (options.context) {
    if (!config.getContextObject(options.context)) {
      const known = config.getContexts().map((context) => context.name);
      throw new KubeConfigError(
        `context "${options.context}" is not in the kubeconfig (it has: ${known.join(', ') || 'none'})`,
      );
    }
    config.setCurrentContext(options.context);
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) {
    throw new KubeConfigError(
      `kubeconfig has no usable current context (current-context: "${config.getCurrentContext()}")`,
    );
  }
  if (
    !options.kubeconfigPath &&
    config.getCurrentContext() === FALLBACK_CONTEXT &&
    cluster.server === FALLBACK_SERVER
  ) {
    throw new KubeConfigError(
      'no cluster configuration found: KUBECONFIG is unset, ~/.kube/config is missing and this is not a pod with a service account; pass a kubeconfig path',
    );
  }
  const requestOptions = async (): Promise<RequestOptions> => {
    const prepared: RequestOptions = {};
    await config.applyToHTTPSOptions(prepared);
    return prepared;
  };
  try {
    // Once up front, so that a missing certificate file or a plain-http server without
    // insecure-skip-tls-verify is a configuration error now rather than a retried failure later.
    const probe = await requestOptions();
    (probe.agent as { destroy?: () => void } | undefined)?.destroy?.();
  } catch (error) {
    throw new KubeConfigError(`cannot prepare requests to ${cluster.server}: ${message(error)}`);
  }
  return { server: cluster.server, requestOptions };
}

/** A `PodApi` for the configured cluster. */
export async function connectPodApi(options: ClusterOptions = {}): Promise<PodApi> {
  return new HttpPodApi(await loadApiConnection(options));
}
