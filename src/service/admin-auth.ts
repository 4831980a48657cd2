/**
 * Who may use the control plane's POST endpoints (forced reconciles).
 *
 * With an admin token configured, exactly the holders of that bearer token. Without one, only
 * loopback clients: `kubectl port-forward` delivers its traffic from 127.0.0.1, so someone with
 * port-forward rights on the pod (an RBAC grant) can trigger a reconcile, while anything reaching
 * the pod over the network cannot. Reads stay open: they reveal what `kubectl get pods` would.
 */
import { timingSafeEqual } from 'node:crypto';

/**
 * The admin check's answer, with the status and message the route sends as they are: 401 for a
 * missing or wrong token, 403 for a client that may not POST at all, 415 for a loopback POST a
 * browser form could have sent.
 */
export type AdminDecision =
  | { allowed: true }
  | { allowed: false; status: 401 | 403 | 415; message: string };

/**
 * What a browser controls of a request, for the loopback-only mode: a web page opened by someone
 * with a port-forward running reaches 127.0.0.1 too, so the peer address alone does not tell a
 * person's `curl` from a cross-site form post or a DNS-rebound script.
 */
export interface AdminRequestHeaders {
  host: string | undefined;
  origin: string | undefined;
  contentType: string | undefined;
}

/**
 * `Host` names that can only mean this machine's loopback: `localhost` and its subdomains (RFC
 * 6761; browsers resolve them to loopback themselves), and 127.0.0.0/8 and ::1 literals. A
 * rebound DNS name pointing at 127.0.0.1 still arrives with its own name, and is refused.
 */
function isLoopbackHost(hostname: string): boolean {
  const name = hostname.toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (name === '::1' || name === '0:0:0:0:0:0:0:1') return true;
  const v4 = name.startsWith('::ffff:') ? name.slice(7) : name;
  const parts = v4.split('.');
  return (
    parts.length === 4 &&
    parts[0] === '127' &&
    parts.every((p) => p.length > 0 && p.length <= 3 && [...p].every((c) => c >= '0' && c <= '9'))
  );
}

/** The host name of a `Host` header value (`name:port`, `[v6]:port`), lowercased; `undefined` if malformed. */
function hostnameOf(host: string): string | undefined {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) return undefined;
    const rest = host.slice(end + 1);
    if (rest !== '' && !rest.startsWith(':')) return undefined;
    return host.slice(1, end).toLowerCase();
  }
  const colon = host.indexOf(':');
  const name = colon < 0 ? host : host.slice(0, colon);
  return name === '' ? undefined : name.toLowerCase();
}

/** Longest piece of a client's header quoted back in a refusal. */
const QUOTED_HEADER_LENGTH = 64;

function quoteHeader(value: string): string {
  return JSON.stringify(
    value.length <= QUOTED_HEADER_LENGTH ? value : `${value.slice(0, QUOTED_HEADER_LENGTH)}…`,
  );
}

/**
 * The loopback-only mode's checks of what a browser sends: a `Host` that names loopback (or one of
 * `allowedHosts`), no `Origin` but the server's own, and a JSON body or none — the content types a
 * page may send across sites without a CORS preflight are `text/plain`, forms and multipart, so a
 * JSON-or-nothing rule leaves a cross-site page only the body-less POST, which the `Origin` check
 * then refuses.
 */
export function checkBrowserRequest(
  headers: AdminRequestHeaders,
  allowedHosts: ReadonlySet<string>,
): AdminDecision {
  const flag = 'see --admin-allowed-hosts, or use --admin-token-file';
  const hostname = headers.host === undefined ? undefined : hostnameOf(headers.host.trim());
  if (hostname === undefined || !(isLoopbackHost(hostname) || allowedHosts.has(hostname))) {
    return {
      allowed: false,
      status: 403,
      message: `without --admin-token-file, POST endpoints want a Host header naming loopback (localhost, 127.0.0.1, [::1]), as kubectl port-forward clients send; got ${headers.host === undefined ? 'none' : quoteHeader(headers.host)} (${flag})`,
    };
  }
  if (headers.origin !== undefined) {
    let origin: string | undefined;
    try {
      const url = new URL(headers.origin);
      origin = url.protocol === 'http:' || url.protocol === 'https:' ? url.host : undefined;
    } catch {
      origin = undefined;
    }
    if (origin === undefined || origin.toLowerCase() !== headers.host!.trim().toLowerCase()) {
      return {
        allowed: false,
        status: 403,
        message: `without --admin-token-file, POST endpoints refuse requests a web page on another origin sends: Origin ${quoteHeader(headers.origin)} is not this server (${quoteHeader(headers.host!)})`,
      };
    }
  }
  if (headers.contentType !== undefined) {
    const type = headers.contentType.split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      return {
        allowed: false,
        status: 415,
        message: `without --admin-token-file, a POST carries a JSON body (Content-Type: application/json) or none, which a web page on another site cannot send unasked; got Content-Type ${quoteHeader(headers.contentType)}`,
      };
    }
  }
  return { allowed: true };
}

/**
 * The peer addresses that mean "this pod's own loopback": exactly 127.0.0.1 and ::1, plus 127.0.0.1
 * as a dual-stack socket reports it (IPv4-mapped). Not the rest of 127.0.0.0/8: a service-mesh
 * sidecar (Istio's Envoy) delivers traffic from outside the pod from 127.0.0.6, so accepting the
 * whole block would let any network client through; `kubectl port-forward` uses 127.0.0.1 / ::1.
 */
const LOOPBACK_ADDRESSES = new Set([
  '127.0.0.1',
  '::1',
  '0:0:0:0:0:0:0:1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
]);

/** Exactly 127.0.0.1 or ::1 (also IPv4-mapped); see `LOOPBACK_ADDRESSES`. */
export function isLoopback(address: string | undefined): boolean {
  return address !== undefined && LOOPBACK_ADDRESSES.has(address.toLowerCase());
}

/**
 * The token of `Bearer <token>` (scheme case-insensitive, spaces or tabs around the token), by
 * hand in one pass: the header is client input of any length, kept away from regular expressions.
 */
export function bearerToken(header: string): string | undefined {
  const isBlank = (c: string): boolean => c === ' ' || c === '\t';
  if (header.length < 8 || header.slice(0, 6).toLowerCase() !== 'bearer' || !isBlank(header[6]!)) {
    return undefined;
  }
  let start = 7;
  while (start < header.length && isBlank(header[start]!)) start += 1;
  let end = header.length;
  while (end > start && isBlank(header[end - 1]!)) end -= 1;
  if (start === end) return undefined;
  for (let i = start; i < end; i += 1) {
    const code = header.charCodeAt(i);
    // \S: anything but whitespace inside the token.
    if (code <= 0x20 || code === 0x7f || code === 0xa0 || /\s/.test(header[i]!)) return undefined;
  }
  return header.slice(start, end);
}

/** Constant-time comparison, so response timing does not leak how much of a guess was right. */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Decides one request. `remoteAddress` is the socket's peer, never a forwarded-for header: a
 * header is whatever the client says it is. Without a token, a loopback peer must also pass
 * `checkBrowserRequest` when `browser` gives its headers.
 */
export function authorizeAdmin(
  adminToken: string | undefined,
  authorization: string | undefined,
  remoteAddress: string | undefined,
  browser?: { headers: AdminRequestHeaders; allowedHosts: ReadonlySet<string> },
): AdminDecision {
  if (adminToken !== undefined) {
    const token = bearerToken(authorization ?? '');
    if (token === undefined) {
      return {
        allowed: false,
        status: 401,
        message:
          'this endpoint needs an Authorization: Bearer <token> header (see --admin-token-file)',
      };
    }
    if (!sameToken(token, adminToken)) {
      return { allowed: false, status: 401, message: 'the bearer token is not the admin token' };
    }
    return { allowed: true };
  }
  if (isLoopback(remoteAddress)) {
    return browser ? checkBrowserRequest(browser.headers, browser.allowedHosts) : { allowed: true };
  }
  return {
    allowed: false,
    status: 403,
    message: `without --admin-token-file, POST endpoints accept only loopback clients (e.g. through kubectl port-forward); this request came from ${remoteAddress ?? 'an unknown address'}`,
  };
}
