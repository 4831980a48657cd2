/**
 * Ordering resourceVersions, as KEP-5504 ("comparable resource version", Kubernetes 1.35) defines
 * it: a resourceVersion the API server hands out is a decimal integer without leading zeros, of up
 * to 128 bits, and two of them compare by length first, then lexically. Never through `Number()`:
 * an etcd revision fits a double today, but the contract allows 128 bits, and a string compare is
 * exact at any length.
 */

/**
 * The largest resourceVersion KEP-5504 allows (2^128 − 1), as its decimal digits: a longer or
 * larger string is not a comparable version, whatever its digits.
 */
export const MAX_RESOURCE_VERSION = '340282366920938463463374607431768211455';

const DECIMAL = /^[1-9][0-9]*$/;

/**
 * Whether `version` is a resourceVersion KEP-5504 lets a client compare: a positive decimal
 * integer without leading zeros, at most `MAX_RESOURCE_VERSION`. Anything else (an aggregated
 * API's opaque token, `0`, a proxy's invention) is only ever passed back to the server.
 */
export function isComparableResourceVersion(version: string): boolean {
  if (version.length > MAX_RESOURCE_VERSION.length || !DECIMAL.test(version)) return false;
  return version.length < MAX_RESOURCE_VERSION.length || version <= MAX_RESOURCE_VERSION;
}

/**
 * Negative when `a` is older than `b`, positive when newer, 0 when equal; `undefined` when either
 * is not comparable (`isComparableResourceVersion`), so a caller that cannot order them keeps
 * whatever it did before the versions became comparable.
 */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!isComparableResourceVersion(a) || !isComparableResourceVersion(b)) return undefined;
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
