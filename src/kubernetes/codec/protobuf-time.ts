/**
 * A `metav1.Time` read from protobuf (`{1: seconds, 2: nanos}`) written as its JSON text: what the
 * API server's JSON encoding would have written for the same value, so a pod read from either
 * encoding carries the same strings.
 *
 * Why bytes, not a string: a pod carries five to ten times, and formatting each into a string
 * (then encoding that string into the hop's JSON) was 30 % of every byte the worker thread
 * allocated during a watch-list of 10,000 engine pods (V8's allocation sampling, collected objects
 * included), more than any other site. Written digit by digit into the JSON buffer, a time
 * allocates nothing.
 */
import type { JsonBuffer } from './pod-json-writer.js';
import { ProtobufDecodeError } from './protobuf-reader.js';

/** The civil date of the last `civilFrom` call (module state: no object per time). */
let civilYear = 0;
let civilMonth = 0;
let civilDay = 0;

/** Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm), integers only. */
function civilFrom(days: number): void {
  const era = Math.floor((days + 719_468) / 146_097);
  const dayOfEra = days + 719_468 - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1_460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear =
    dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  civilDay = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  civilMonth = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  civilYear = yearOfEra + era * 400 + (civilMonth <= 2 ? 1 : 0);
}

const QUOTE = 0x22;
const DASH = 0x2d;
const COLON = 0x3a;
const DIGIT_ZERO = 0x30;
const LETTER_T = 0x54;
const LETTER_Z = 0x5a;

/**
 * Unix seconds as the JSON string of Go's `time.RFC3339` in UTC (`"2006-01-02T15:04:05Z"`), as
 * `metav1.Time` marshals it. The years 0000–9999, which is what Go can marshal, are written
 * digit by digit; outside them the text is `Date`'s ISO form without its milliseconds; beyond
 * what a `Date` holds (±8.64e12 s) a `ProtobufDecodeError`.
 */
export function writeRfc3339Seconds(out: JsonBuffer, seconds: number): void {
  const days = Math.floor(seconds / 86_400);
  civilFrom(days);
  if (civilYear < 0 || civilYear > 9_999) {
    out.string(outsideGoYears(seconds));
    return;
  }
  const inDay = seconds - days * 86_400;
  const hours = Math.floor(inDay / 3_600);
  const minutes = Math.floor((inDay % 3_600) / 60);
  const secs = inDay % 60;
  out.reserve(22);
  const bytes = out.bytes;
  let at = out.length;
  bytes[at++] = QUOTE;
  at = twoDigits(bytes, at, Math.floor(civilYear / 100));
  at = twoDigits(bytes, at, civilYear % 100);
  bytes[at++] = DASH;
  at = twoDigits(bytes, at, civilMonth);
  bytes[at++] = DASH;
  at = twoDigits(bytes, at, civilDay);
  bytes[at++] = LETTER_T;
  at = twoDigits(bytes, at, hours);
  bytes[at++] = COLON;
  at = twoDigits(bytes, at, minutes);
  bytes[at++] = COLON;
  at = twoDigits(bytes, at, secs);
  bytes[at++] = LETTER_Z;
  bytes[at++] = QUOTE;
  out.length = at;
}

/** `value` (0–99) as two ASCII digits at `at`; answers the index after them. */
function twoDigits(bytes: Uint8Array, at: number, value: number): number {
  bytes[at] = DIGIT_ZERO + Math.floor(value / 10);
  bytes[at + 1] = DIGIT_ZERO + (value % 10);
  return at + 2;
}

/** A time Go would refuse to marshal, as `Date` writes it (to the second). */
function outsideGoYears(seconds: number): string {
  const date = new Date(seconds * 1000);
  if (Number.isNaN(date.getTime())) throw new ProtobufDecodeError('time out of range');
  const iso = date.toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
}
