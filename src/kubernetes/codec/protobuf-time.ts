/**
 * A `metav1.Time` read from protobuf (`{1: seconds, 2: nanos}`) as its JSON text: what the API
 * server's JSON encoding would have written for the same value, so a pod read from either
 * encoding carries the same strings.
 */
import { ProtobufDecodeError } from './protobuf-reader.js';

const pad2 = (value: number): string => (value < 10 ? `0${value}` : String(value));

/** The last time formatted: pods written together share timestamps, and formatting is not free. */
let lastSeconds = Number.NaN;
let lastText = '';

/**
 * Unix seconds as Go's `time.RFC3339` in UTC ("2006-01-02T15:04:05Z"), as `metav1.Time` marshals
 * to JSON. Integer arithmetic (days to a civil date, H. Hinnant's algorithm) for the years
 * 0000–9999, which is what Go can marshal; `Date` outside them; a `ProtobufDecodeError` beyond
 * what a `Date` holds (±8.64e12 s).
 */
export function rfc3339Seconds(seconds: number): string {
  if (seconds === lastSeconds) return lastText;
  let text: string;
  const days = Math.floor(seconds / 86_400);
  const inDay = seconds - days * 86_400;
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
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  if (year >= 0 && year <= 9_999) {
    const hours = Math.floor(inDay / 3_600);
    const minutes = Math.floor((inDay % 3_600) / 60);
    text = `${String(year).padStart(4, '0')}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(inDay % 60)}Z`;
  } else {
    const date = new Date(seconds * 1000);
    if (Number.isNaN(date.getTime())) throw new ProtobufDecodeError('time out of range');
    const iso = date.toISOString();
    text = iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
  }
  lastSeconds = seconds;
  lastText = text;
  return text;
}
