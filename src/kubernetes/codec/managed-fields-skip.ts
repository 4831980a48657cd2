/**
 * Parses one JSON watch line without building its object's `metadata.managedFields`: the
 * server's field-ownership bookkeeping, which nothing here reads, and on an engine pod a third of
 * the line's bytes and most of its objects (~1.9 of 5.7 KB, a nested tree of `f:` keys). The
 * protobuf reader skips it by length; JSON has no lengths, so its value is found by a bracket
 * scan of its bytes and replaced by a placeholder before `JSON.parse` sees the line.
 *
 * Why: in the worker's profile of a 1,000-event burst, `JSON.parse` of each line was a third of
 * the thread's time and its garbage most of the rest of the collector's; a scan of the skipped
 * bytes costs a fraction of building them.
 *
 * Exact by construction: the first `"managedFields":[` in the line is replaced by
 * `"managedFields":0`, and the result is kept only when the parsed line's
 * `object.metadata.managedFields` is that placeholder, so the replaced value was the one in the
 * object's metadata (a key of that name elsewhere, or inside a string, fails the check). Any other
 * outcome (no such key, a scan that finds no end, a line that does not parse once cut) parses
 * the whole line as it is, with `JSON.parse`'s own error for one that is not JSON. The one
 * difference from parsing the whole line: the skipped value's tokens are only counted, not
 * checked, so a line whose managedFields alone is not valid JSON is read (docs/alignment.md).
 */

const MANAGED_FIELDS_KEY = Buffer.from('"managedFields":[');
/** Where the key's value starts, from the key's first byte: its `[`. */
const VALUE_OFFSET = MANAGED_FIELDS_KEY.length - 1;
/**
 * What stands in for the skipped value: a number, which the API server never sends there (the
 * field is a list), so finding it in the parsed metadata proves that is where the cut was made.
 */
const PLACEHOLDER = 0;
const PLACEHOLDER_TEXT = String(PLACEHOLDER);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * The index just after the array or object that opens at `start`, skipping strings (and the
 * escapes in them); -1 when the bytes end first.
 */
function endOfValue(bytes: Buffer, start: number): number {
  const length = bytes.length;
  let depth = 0;
  let at = start;
  while (at < length) {
    const byte = bytes[at++] as number;
    if (byte === QUOTE) {
      while (at < length) {
        const inside = bytes[at++] as number;
        if (inside === BACKSLASH) at += 1;
        else if (inside === QUOTE) break;
      }
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) depth += 1;
    else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) {
      depth -= 1;
      if (depth === 0) return at;
    }
  }
  return -1;
}

/** `value.object.metadata.managedFields` is the placeholder. */
function cutInMetadata(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const object = (value as { object?: unknown }).object;
  if (typeof object !== 'object' || object === null) return false;
  const metadata = (object as { metadata?: unknown }).metadata;
  if (typeof metadata !== 'object' || metadata === null) return false;
  return (metadata as { managedFields?: unknown }).managedFields === PLACEHOLDER;
}

/**
 * The line as `JSON.parse` reads it, except that `object.metadata.managedFields`, when it is a
 * list, is the number 0. Throws what `JSON.parse` throws for the whole line.
 */
export function parseWithoutManagedFields(line: Buffer): unknown {
  const key = line.indexOf(MANAGED_FIELDS_KEY);
  if (key !== -1) {
    const valueStart = key + VALUE_OFFSET;
    const valueEnd = endOfValue(line, valueStart);
    if (valueEnd !== -1) {
      const cut =
        line.toString('utf8', 0, valueStart) + PLACEHOLDER_TEXT + line.toString('utf8', valueEnd);
      let value: unknown;
      try {
        value = JSON.parse(cut);
      } catch {
        value = undefined;
      }
      if (cutInMetadata(value)) return value;
    }
  }
  return JSON.parse(line.toString('utf8'));
}
