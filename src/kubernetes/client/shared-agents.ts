/**
 * The connections requests to the API server share: one kept-alive HTTP(S) agent per TLS
 * material (client-node makes a new agent, so a new TLS handshake on both sides, per request),
 * what decides that two requests may share one, and how a request's agent is handed back. HTTP/2
 * (./http2-sessions.ts) shares by the same material.
 */
import type http from 'node:http';
import https, { type RequestOptions } from 'node:https';
import { nodeHttp } from './node-http.js';

/**
 * How long a kept-alive connection may sit unused before it is closed: below kube-apiserver's own
 * idle timeout (90 s, as client-go's transport `IdleConnTimeout`), so a reused connection is not
 * one the server is closing at the same moment.
 */
export const IDLE_CONNECTION_TIMEOUT_MS = 30_000;

/**
 * TCP keepalive on API connections, as client-node's `Watch` sets: finds half-dead peers. Set on
 * each request's socket (./api-exchange.ts) and kept by the agent when a socket goes back to its
 * pool.
 */
export const TCP_KEEPALIVE_MS = 30_000;

/**
 * The TLS options client-node copies into each request's agent (`applyToHTTPSOptions`): two
 * requests whose values are all equal may share connections. Anything else in the options
 * (headers with a rotating token) is per request and does not touch the connection.
 */
export const AGENT_FIELDS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
  'ciphers',
  'honorCipherOrder',
  'ecdhCurve',
  'crl',
  'dhparam',
  'secureOptions',
  'secureProtocol',
  'sessionIdContext',
] as const;

type AgentField = (typeof AGENT_FIELDS)[number];

/** The TLS options of a request that decide which connections it may share (`AGENT_FIELDS`). */
export type AgentMaterial = Partial<Record<AgentField, unknown>>;

/**
 * The material is read from the request's options, which client-node fills from the files on
 * every call: its own agent may be one it cached before a certificate was rotated.
 */
export function agentMaterial(prepared: RequestOptions): AgentMaterial {
  const material: AgentMaterial = {};
  const options = prepared as Record<string, unknown>;
  for (const field of AGENT_FIELDS) {
    if (options[field] !== undefined) material[field] = options[field];
  }
  return material;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => sameValue(item, b[index]));
  }
  return false;
}

/** Whether two requests' TLS material lets them share a connection. */
export function sameMaterial(a: AgentMaterial, b: AgentMaterial): boolean {
  return AGENT_FIELDS.every((field) => sameValue(a[field], b[field]));
}

/** Agents this module shares between requests: a caller must not destroy them. */
const sharedAgents = new WeakSet<object>();

/**
 * Ends what a request's agent holds once the request is done: an agent made for that one request
 * (a proxy's) is destroyed; a shared keep-alive agent is left to its other requests and its idle
 * timeout.
 */
export function releaseRequestAgent(agent: unknown): void {
  if (typeof agent !== 'object' || agent === null || sharedAgents.has(agent)) return;
  (agent as { destroy?: () => void }).destroy?.();
}

/**
 * Whether a request's options go straight to the server over TLS through the shared agent: not
 * through a proxy (client-node's proxy agents stay as it made them) and not over plain `http`.
 * Only such a request may go over HTTP/2 (./http2-sessions.ts), which connects by itself.
 */
export function goesDirectOverTls(prepared: RequestOptions): boolean {
  return sharedAgentScheme(prepared) === 'https';
}

/**
 * The scheme of the shared agent a request's options go through (`sharedAgentCache`), or
 * undefined when its agent is not one of these (a proxy's, or none): then the options need their
 * agent object as client-node made it, and cannot be rebuilt from their fields elsewhere.
 */
export function sharedAgentScheme(prepared: RequestOptions): 'https' | 'http' | undefined {
  const agent = prepared.agent as unknown;
  if (typeof agent !== 'object' || agent === null || !sharedAgents.has(agent)) return undefined;
  return plainAgentScheme(agent);
}

/** `https` or `http` for node's own agents; undefined for anything else (a proxy's subclass). */
function plainAgentScheme(agent: unknown): 'https' | 'http' | undefined {
  if (typeof agent !== 'object' || agent === null) return undefined;
  const proto = Object.getPrototypeOf(agent) as unknown;
  if (proto === https.Agent.prototype) return 'https';
  if (proto === nodeHttp.Agent.prototype) return 'http';
  return undefined;
}

/**
 * client-node makes a new agent for every request, so every LIST page, watch, Lease renewal and
 * EndpointSlice write would open a new TCP connection and do a new TLS handshake (on both sides:
 * the API server pays too). This keeps one keep-alive agent per connection and TLS material and
 * swaps it in, as client-go's transport reuses its connections. A rotated client certificate
 * (exec plugins) gives a new agent; the old one's idle connections close on their own. A proxy
 * agent (a subclass) is left as client-node made it.
 */
export function sharedAgentCache(): (prepared: RequestOptions, scheme?: 'https' | 'http') => void {
  let current: { material: AgentMaterial; kind: 'http' | 'https'; agent: http.Agent } | undefined;
  // `scheme`: options rebuilt without an agent (./request-snapshot.ts) get the shared one of that
  // scheme; otherwise the fresh agent client-node made says which, and is destroyed.
  return (prepared, scheme) => {
    const fresh = prepared.agent as unknown;
    const kind = fresh === undefined ? scheme : plainAgentScheme(fresh);
    if (kind === undefined) return;
    const material = agentMaterial(prepared);
    if (!current || current.kind !== kind || !sameMaterial(current.material, material)) {
      const agentOptions = {
        ...material,
        keepAlive: true,
        // node resets a pooled socket's TCP keepalive to this (1 s by default) when it is freed.
        keepAliveMsecs: TCP_KEEPALIVE_MS,
        timeout: IDLE_CONNECTION_TIMEOUT_MS,
      } as https.AgentOptions;
      const agent =
        kind === 'https' ? new https.Agent(agentOptions) : new nodeHttp.Agent(agentOptions);
      sharedAgents.add(agent);
      current = { material, kind, agent };
    }
    (fresh as http.Agent | undefined)?.destroy();
    prepared.agent = current.agent;
  };
}
