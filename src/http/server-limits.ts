/**
 * How long the control plane's server waits for clients, how many it serves at once, and how
 * large a path parameter and a body may be: set together, because each bounds what a slow or
 * malicious client can hold (slowloris), and error texts quote them.
 */

/** How long the server waits for clients, and how many it serves at once. */
export interface ServerTimeouts {
  /** Node `headersTimeout`: the request line and headers must arrive within this. */
  headersMs: number;
  /** Node `requestTimeout`: the whole request, headers and body, must arrive within this. */
  requestMs: number;
  /** A request body must arrive within this once its headers have (the injected clock times it). */
  bodyMs: number;
  /** Node `keepAliveTimeout`: how long an idle keep-alive connection is kept open. */
  keepAliveMs: number;
  /** Node `maxConnections`: connections beyond this are closed as they arrive. */
  maxConnections: number;
}

/**
 * The control plane's requests are a request line, a few headers and at most a tiny JSON body,
 * from probes, Prometheus, routers and people behind `kubectl port-forward`. Node's defaults
 * (60 s for headers, 300 s per request, no cap on connections) let a slow or malicious client hold
 * a connection, a socket and its buffers for minutes each (slowloris).
 */
export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  // Ten seconds is an eternity for a few hundred bytes of headers, even over port-forward.
  headersMs: 10_000,
  // A backstop over headers + body; Node checks it every 30 s (connectionsCheckingInterval).
  requestMs: 30_000,
  // No route needs more than 1 MiB of body, which arrives in well under a second on any link;
  // timed by the injected clock, so tests cut a stalled body off without waiting.
  bodyMs: 10_000,
  // Longer than the 60 s idle timeout of the proxies commonly in front (AWS ALB, nginx's
  // default 75 s upstream keepalive aside), so the proxy closes idle connections first and never
  // reuses one we are closing (a 502); Fastify's default is 72 s, Node's 5 s.
  keepAliveMs: 65_000,
  // Probes, scrapes, a few routers and debugging sessions need tens; the cap bounds sockets and
  // memory when something opens connections without end.
  maxConnections: 1_024,
};

/**
 * The longest path parameter the router accepts. Fastify's default is 100, but a one-pod cell is
 * named after its pod, and a pod name may be a 253-character DNS subdomain.
 */
export const MAX_PARAM_LENGTH = 253;

/** The largest request body: Fastify's default (1 MiB), stated so errors can say it. No route reads a body. */
export const BODY_LIMIT = 1_048_576;
