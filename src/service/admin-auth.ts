/**
 * Who may use the control plane's POST endpoints (forced reconciles).
 *
 * With an admin token configured, exactly the holders of that bearer token. Without one, only
 * loopback clients: `kubectl port-forward` delivers its traffic from 127.0.0.1, so someone with
 * port-forward rights on the pod (an RBAC grant) can trigger a reconcile, while anything reaching
 * the pod over the network cannot. Reads stay open: they reveal what `kubectl get pods` would.
 */
import { timingSafeEqual } from 'node:crypto';

export type AdminDecision =
  | { allowed: true }
  | { allowed: false; status: 401 | 403; message: string };

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

/** Constant-time comparison, so response timing does not leak how much of a guess was right. */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Decides one request. `remoteAddress` is the socket's peer, never a forwarded-for header: a
 * header is whatever the client says it is.
 */
export function authorizeAdmin(
  adminToken: string | undefined,
  authorization: string | undefined,
  remoteAddress: string | undefined,
): AdminDecision {
  if (adminToken !== undefined) {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
    if (!match) {
      return {
        allowed: false,
        status: 401,
        message:
          'this endpoint needs an Authorization: Bearer <token> header (see --admin-token-file)',
      };
    }
    if (!sameToken(match[1]!, adminToken)) {
      return { allowed: false, status: 401, message: 'the bearer token is not the admin token' };
    }
    return { allowed: true };
  }
  if (isLoopback(remoteAddress)) return { allowed: true };
  return {
    allowed: false,
    status: 403,
    message: `without --admin-token-file, POST endpoints accept only loopback clients (e.g. through kubectl port-forward); this request came from ${remoteAddress ?? 'an unknown address'}`,
  };
}
