/**
 * The connection to the API server: reads the kubeconfig (or the in-cluster service account)
 * into a base URL plus per-request auth and TLS options.
 *
 * This is the only module that imports `@kubernetes/client-node`, and only lazily (a dynamic
 * import inside `loadApiConnection`), so the runtime, the pool domain and every test that uses a
 * fake API load without it. client-node is used for what it is good at — kubeconfig, in-cluster
 * service accounts, exec/OIDC/token-file auth, TLS — while the requests themselves go over plain
 * `node:http(s)` (./api-exchange.ts, for ../resources/http-pod-api.ts and ./api-request.ts), so the
 * callers control bytes, decoding and closing, over connections kept alive by ./shared-agents.ts.
 *
 * In a build, client-node's `KubeConfig` is loaded from dist/vendor/client-node-kubeconfig.cjs, the
 * same pinned package bundled into one file by scripts/bundle-client-node.mjs at build time: the
 * package's ~970 modules take 300–500 ms to load on 2 cores, the bundle about 60 ms, and that time
 * comes before the reflector's first LIST. Where the bundle is absent (the sources run by the test
 * runner), the package itself is imported.
 */
import { stat } from 'node:fs/promises';
import type { RequestOptions } from 'node:https';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { kubeconfigErrorSummary, safeErrorMessage } from './safe-error.js';
import { releaseRequestAgent, sharedAgentCache } from './shared-agents.js';

/** Where to find the cluster. Plain strings, so they cross to the worker thread. */
export interface ClusterOptions {
  /** A kubeconfig file; else client-node's `loadFromDefault`: KUBECONFIG, ~/.kube/config, in-cluster. */
  kubeconfigPath?: string;
  /** A context of that kubeconfig; else its current-context. */
  context?: string;
  /**
   * The encoding to ask for on pod LIST and WATCH (`--kube-api-content-type`); protobuf when
   * unset, as client-go's typed clients. Requests that write (Lease, EndpointSlice) stay JSON.
   */
  apiContentType?: 'protobuf' | 'json';
  /**
   * Ask for gzip on pod LISTs and watch-lists (`--kube-api-compression`); off when unset. Next to
   * the API server (in the cluster) the bytes are cheap and the compression is not: it costs the
   * API server CPU for every page and this process as much again to inflate it.
   */
  apiCompression?: boolean;
  /**
   * Read pod LISTs and watches over HTTP/2 when the server offers it (`--kube-api-http2`); on
   * when unset, as Go's transport (so client-go) is. The initial events arrive in fewer, larger
   * reads, and the sync takes 10-15 % less time and CPU here (./http2-sessions.ts).
   */
  apiHttp2?: boolean;
}

/**
 * The configuration cannot reach any cluster: permanent until someone fixes the flags. Its
 * message is safe to show and log: it names the file, the line and the kind of error, never the
 * file's contents (./safe-error.ts), and it keeps no `cause`.
 */
export class KubeConfigError extends Error {
  override readonly name = 'KubeConfigError';
}

/**
 * How HTTP requests reach the API server: its base URL, and fresh auth options per request over
 * kept-alive connections (the options' agent is shared; hand it to `releaseRequestAgent` when done).
 */
export interface ApiConnection {
  server: string;
  /**
   * Called before every request, because tokens rotate (in-cluster token files, exec plugins) and
   * client-node refreshes them in here.
   */
  requestOptions(): Promise<RequestOptions>;
}

/**
 * client-node 2 caches one agent per (cluster, user) and hands it out again whatever the TLS
 * material is now, so a rotated CA or client certificate would keep the old one, and a proxy
 * agent made for one request would be shared by all (and destroyed under them by
 * `releaseRequestAgent`). Forgetting that cache before each `applyToHTTPSOptions` keeps the
 * per-request agent client-node 1 made; `sharedAgentCache` above does the sharing, by material.
 */
function forgetClientNodeAgents(config: object): void {
  const cache = (config as { agentCache?: unknown }).agentCache;
  if (cache instanceof Map) cache.clear();
}

/**
 * The kubeconfig context in use, as far as the namespace to watch is concerned: what `kubectl`
 * reads its default namespace from. Names only, nothing of the credentials.
 */
export interface KubeconfigContext {
  name: string;
  /** The context's namespace, untrimmed and unchecked (a file's text); absent when none. */
  namespace: string | undefined;
  /**
   * The configuration is the pod's service account (no kubeconfig was found), so `namespace` is
   * the service account's namespace file.
   */
  inCluster: boolean;
}

/** The context name client-node gives the configuration it builds from a service account. */
const IN_CLUSTER_CONTEXT = 'inClusterContext';

/** client-node's `loadFromDefault` ends here when it found nothing at all. */
const FALLBACK_CONTEXT = 'loaded-context';
const FALLBACK_SERVER = 'http://localhost:8080';

/**
 * Checks a kubeconfig path before client-node reads it, for the messages client-node does not
 * give: a directory reads as a bare EISDIR, and an empty file as a TypeError from inside it.
 */
async function checkKubeconfigFile(path: string): Promise<void> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: ${kubeconfigErrorSummary(error)}`);
  }
  if (info.isDirectory()) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: it is a directory, not a file`);
  }
  if (info.isFile() && info.size === 0) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: the file is empty`);
  }
}

/**
 * Starts loading the Kubernetes client without waiting for it: the reflector's worker thread
 * calls this after its first sync (its first request needed no client: ./request-snapshot.ts), so
 * that a later request does not wait for a large module graph. A failure is ignored here and
 * reported by the first call that needs the client.
 */
export function preloadClientNode(): void {
  void loadKubeConfigClass().catch(() => undefined);
}

/** client-node's `KubeConfig` class, whichever way it was loaded. */
type KubeConfigClass = typeof import('@kubernetes/client-node').KubeConfig;

/** Where `KubeConfig` came from: the build's bundle, or the package (no bundle beside this file). */
type ClientNodeOrigin = 'bundle' | 'package';

/**
 * dist/src/kubernetes/client/connection.js → dist/vendor/…; from the sources it names no file.
 * CommonJS, `require`d: the reflector's worker thread then loads it without starting Node's ESM
 * loader (scripts/bundle-client-node.mjs).
 */
const BUNDLE_PATH = fileURLToPath(
  new URL('../../../vendor/client-node-kubeconfig.cjs', import.meta.url),
);

let loading: Promise<{ KubeConfig: KubeConfigClass; origin: ClientNodeOrigin }> | undefined;

/**
 * Loads `KubeConfig` once per thread: the bundle when this file runs from a build, else the
 * package. Only a missing bundle falls back; a bundle that fails to load is an error, so a broken
 * build is seen rather than silently slow.
 */
function loadKubeConfigClass(): Promise<{
  KubeConfig: KubeConfigClass;
  origin: ClientNodeOrigin;
}> {
  loading ??= (async () => {
    try {
      const bundle = createRequire(import.meta.url)(BUNDLE_PATH) as { KubeConfig: KubeConfigClass };
      return { KubeConfig: bundle.KubeConfig, origin: 'bundle' as const };
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw error;
    }
    const clientNode = await import('@kubernetes/client-node');
    return { KubeConfig: clientNode.KubeConfig, origin: 'package' as const };
  })();
  // A failed load is not cached: the next caller tries again (and reports its own error).
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

/**
 * Where this thread's `KubeConfig` came from (loading it if need be). The class itself stays
 * private: its type would make the published declarations name @kubernetes/client-node, which
 * a build does not need at run time (it is a development dependency; the bundle carries it).
 */
export async function importKubeConfig(): Promise<{ origin: ClientNodeOrigin }> {
  const { origin } = await loadKubeConfigClass();
  return { origin };
}

/** Reads the kubeconfig (or in-cluster config) into a connection; throws `KubeConfigError`. */
export async function loadApiConnection(options: ClusterOptions = {}): Promise<ApiConnection> {
  return (await connect(options)).connection;
}

/** The connection and the context it was made from. */
async function connect(
  options: ClusterOptions,
): Promise<{ connection: ApiConnection; context: KubeconfigContext }> {
  let KubeConfig: KubeConfigClass;
  try {
    ({ KubeConfig } = await loadKubeConfigClass());
  } catch (error) {
    throw new KubeConfigError(`cannot load @kubernetes/client-node: ${safeErrorMessage(error)}`);
  }
  const config = new KubeConfig();
  if (options.kubeconfigPath) await checkKubeconfigFile(options.kubeconfigPath);
  try {
    if (options.kubeconfigPath) config.loadFromFile(options.kubeconfigPath);
    else config.loadFromDefault();
  } catch (error) {
    throw new KubeConfigError(
      `cannot read kubeconfig ${options.kubeconfigPath ?? '(KUBECONFIG or ~/.kube/config)'}: ${kubeconfigErrorSummary(error)}`,
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
      'no cluster configuration found: KUBECONFIG is unset, ~/.kube/config is missing and this is not a pod with a service account; pass --kubeconfig PATH (or set KUBECONFIG; from the library, kubeconfigPath), or run with --source simulated',
    );
  }
  const shareAgent = sharedAgentCache();
  const requestOptions = async (): Promise<RequestOptions> => {
    const prepared: RequestOptions = {};
    forgetClientNodeAgents(config);
    await config.applyToHTTPSOptions(prepared);
    shareAgent(prepared);
    return prepared;
  };
  try {
    // Once up front, so that a missing certificate file or a plain-http server without
    // insecure-skip-tls-verify is a configuration error now rather than a retried failure later.
    releaseRequestAgent((await requestOptions()).agent);
  } catch (error) {
    throw new KubeConfigError(
      `cannot prepare requests to ${cluster.server}: ${safeErrorMessage(error)}`,
    );
  }
  const name = config.getCurrentContext();
  const context: KubeconfigContext = {
    name,
    namespace: config.getContextObject(name)?.namespace || undefined,
    inCluster: !options.kubeconfigPath && name === IN_CLUSTER_CONTEXT,
  };
  return { connection: { server: cluster.server, requestOptions }, context };
}

/**
 * Checks at start that `options` lead to a usable cluster configuration, so that a permanent
 * mistake (a kubeconfig with a syntax error, an empty file, a directory, an unreadable file, an
 * unknown `--context`, a plain-`http` server without `insecure-skip-tls-verify`) fails the start
 * with one safe line instead of being retried by the reflector every second. Throws
 * `KubeConfigError`; contacts no server. Returns the context in use, for the default namespace.
 */
export async function checkClusterConfig(options: ClusterOptions = {}): Promise<KubeconfigContext> {
  return (await connect(options)).context;
}
