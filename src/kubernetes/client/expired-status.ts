/**
 * client-go's `IsResourceExpired`: whether a Status says a version (a watch cursor, or a LIST's
 * continue token) was compacted away. Here, below the reflector, because the pager's fallback to
 * one unpaged LIST (../resources/http-pod-api.ts) asks it as well as the reflector's failure
 * classification (../reflector/reflector-failure.ts).
 */
import type { ApiStatus } from './api-errors.js';

/** The Status reasons the API server gives an expired version (`StatusReasonExpired`, `Gone`). */
const EXPIRED_REASONS = new Set(['Expired', 'Gone']);
/** The code it gives one: 410 Gone. */
const HTTP_GONE = 410;

/** The version the request named is gone: 410, or a reason that says so. */
export function isExpiredStatus(status: ApiStatus): boolean {
  return (
    status.code === HTTP_GONE || (status.reason !== undefined && EXPIRED_REASONS.has(status.reason))
  );
}
