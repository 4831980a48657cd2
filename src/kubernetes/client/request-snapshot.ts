/**
 * One request's settings for the API server as plain data (server, headers, TLS material), taken
 * on one thread and used on another: the main thread resolves the credentials of a reflector
 * stream's first request, and the reflector's thread sends it without reading the kubeconfig.
 *
 * Why: the reflector's thread starts with nothing loaded. Before its first request it loaded
 * client-node's kubeconfig bundle (~11 ms on this project's 2-core machine) and read the
 * kubeconfig into credentials (~6 ms), on the path from process start to the first LIST
 * (docs/performance.md). The main thread has them already (the service checks the kubeconfig at
 * start) or resolves them while the thread is still starting (~40 ms of Node's own).
 *
 * Only the first request uses the snapshot: every later one asks the thread's own connection,
 * loaded when first needed, so rotated tokens (in-cluster token files, exec plugins) and
 * certificates are read again exactly as before. A configuration whose requests need more than
 * headers and TLS material (a proxy's agent, an option this module does not know) gives no
 * snapshot, and the thread reads the kubeconfig itself.
 */
import type { RequestOptions } from 'node:https';
import type { ApiConnection, ClusterOptions } from './connection.js';
import {
  AGENT_FIELDS,
  type AgentMaterial,
  agentMaterial,
  releaseRequestAgent,
  sharedAgentCache,
  sharedAgentScheme,
} from './shared-agents.js';

/** A request's settings, structured-cloneable: what `ApiConnection.requestOptions` resolved. */
export interface RequestSnapshot {
  server: string;
  /** The agent the request went through: TLS, or plain HTTP (an `http://` server). */
  scheme: 'https' | 'http';
  /** Every header the credentials set (`Authorization`, `Impersonate-User`, …). */
  headers: Record<string, string>;
  /** Basic auth (`user:password`), as client-node sets it for a kubeconfig user with a password. */
  auth?: string;
  /** The TLS fields of the options (CA, client certificate and key, server name, …). */
  material: AgentMaterial;
}

/** The options `applyToHTTPSOptions` sets that a snapshot carries; any other refuses one. */
const SNAPSHOT_FIELDS: ReadonlySet<string> = new Set(['headers', 'auth', 'agent', ...AGENT_FIELDS]);

/**
 * The settings of `connection`'s next request, or undefined when they cannot cross as data. The
 * credentials are resolved now, as for a request; nothing of them is logged or thrown.
 */
export async function snapshotRequest(
  connection: ApiConnection,
): Promise<RequestSnapshot | undefined> {
  const prepared = await connection.requestOptions();
  try {
    const scheme = sharedAgentScheme(prepared);
    if (scheme === undefined) return undefined;
    const fields = prepared as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      if (fields[key] !== undefined && !SNAPSHOT_FIELDS.has(key)) return undefined;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(prepared.headers ?? {})) {
      if (typeof value !== 'string') return undefined;
      headers[name] = value;
    }
    if (prepared.auth !== undefined && typeof prepared.auth !== 'string') return undefined;
    return {
      server: connection.server,
      scheme,
      headers,
      ...(prepared.auth === undefined ? {} : { auth: prepared.auth }),
      material: agentMaterial(prepared),
    };
  } finally {
    releaseRequestAgent(prepared.agent);
  }
}

/**
 * A structured clone turns a `Buffer` into a plain `Uint8Array`: made a `Buffer` again (same
 * bytes, no copy), so that the thread's connections are shared by material with the ones its own
 * connection prepares later (`sameMaterial` compares buffers by content).
 */
function asBuffers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asBuffers);
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return value;
}

/**
 * A connection whose first request goes out with `snapshot`'s settings and every later one with
 * the settings `connect(cluster)` prepares; that connection is made when the second request asks
 * (and again after a failure to make it, which fails only that request).
 */
export function connectionFromSnapshot(
  snapshot: RequestSnapshot,
  cluster: ClusterOptions,
  connect: (cluster: ClusterOptions) => Promise<ApiConnection>,
): ApiConnection {
  let first: RequestSnapshot | undefined = snapshot;
  let own: Promise<ApiConnection> | undefined;
  const shareAgent = sharedAgentCache();
  return {
    server: snapshot.server,
    async requestOptions(): Promise<RequestOptions> {
      if (first !== undefined) {
        const settings = first;
        first = undefined;
        return restore(settings, shareAgent);
      }
      if (own === undefined) {
        const connecting = connect(cluster);
        own = connecting;
        connecting.catch(() => {
          if (own === connecting) own = undefined;
        });
      }
      return (await own).requestOptions();
    },
  };
}

/** The request options `snapshot` was taken from, over an agent shared by material. */
function restore(
  snapshot: RequestSnapshot,
  shareAgent: (prepared: RequestOptions, scheme: 'https' | 'http') => void,
): RequestOptions {
  const material: AgentMaterial = {};
  for (const [field, value] of Object.entries(snapshot.material)) {
    material[field as keyof AgentMaterial] = asBuffers(value);
  }
  const prepared: RequestOptions = {
    ...(material as RequestOptions),
    headers: { ...snapshot.headers },
    ...(snapshot.auth === undefined ? {} : { auth: snapshot.auth }),
  };
  shareAgent(prepared, snapshot.scheme);
  return prepared;
}
