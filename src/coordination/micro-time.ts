/**
 * MicroTime: the timestamp format of a Lease's `acquireTime` and `renewTime`.
 *
 * The API server writes `metav1.MicroTime` as RFC 3339 in UTC with exactly six fractional digits
 * (`2006-01-02T15:04:05.000000Z`). Writing the same shape means a record read back compares equal
 * to the one written, so the elector does not mistake its own write for someone else's change.
 */

/**
 * Formats `date` as a MicroTime: UTC, six fractional digits, `Z`. JavaScript dates carry
 * milliseconds only, so the last three digits are always `000`. Throws `RangeError` for an
 * invalid date (as `Date.prototype.toISOString` does), because a Lease must never carry one.
 */
export function formatMicroTime(date: Date): string {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ, always UTC
  return `${iso.slice(0, -1)}000Z`;
}
