/**
 * Parses a JSON watch line or LIST body without building its pods' `metadata.managedFields`: the
 * server's field-ownership bookkeeping, which nothing here reads, and on an engine pod a third of
 * the line's bytes and most of its objects (~1.9 of 5.7 KB, a nested tree of `f:` keys). The
 * protobuf reader skips it by length; JSON has no lengths, so its value is found by a bracket
 * scan of its bytes and replaced by a placeholder before `JSON.parse` sees the line.
 *
 * Why: in the worker's profile of a 1,000-event burst, `JSON.parse` of each line was a third of
 * the thread's time and its garbage most of the rest of the collector's; a scan of the skipped
 * bytes costs a fraction of building them.
 *
 * Exact by construction: each `"managedFields":[…]` in the bytes (a watch line's first) is replaced by
 * `"managedFields":0`, and the result is kept only when each placeholder is found in a pod's
 * metadata (the watch line's object, the LIST's items), so every value replaced was one there (a
 * key of that name elsewhere, or inside a string, fails the check). Any other outcome (no such
 * key, a scan that finds no end, bytes that do not parse once cut) parses the bytes as they are,
 * with `JSON.parse`'s own error for bytes that are not JSON. The one difference from parsing them
 * whole: a skipped value's tokens are only counted, not checked, so a pod whose managedFields
 * alone is not valid JSON is read (docs/alignment.md).
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

/** `value.metadata.managedFields` is the placeholder. */
function holdsPlaceholder(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const metadata = (value as { metadata?: unknown }).metadata;
  if (typeof metadata !== 'object' || metadata === null) return false;
  return (metadata as { managedFields?: unknown }).managedFields === PLACEHOLDER;
}

/**
 * The bytes as text with the first `most` `"managedFields":[…]` values replaced by the
 * placeholder, and how many were; `undefined` when there is none, or a value whose end the bytes
 * do not hold. A watch line asks for one: no search of the rest of its bytes for another.
 */
function cutUpTo(bytes: Buffer, most: number): { text: string; cuts: number } | undefined {
  let key = bytes.indexOf(MANAGED_FIELDS_KEY);
  if (key === -1) return undefined;
  const parts: string[] = [];
  let kept = 0;
  let cuts = 0;
  while (key !== -1) {
    const valueStart = key + VALUE_OFFSET;
    const valueEnd = endOfValue(bytes, valueStart);
    if (valueEnd === -1) return undefined;
    parts.push(bytes.toString('utf8', kept, valueStart), PLACEHOLDER_TEXT);
    kept = valueEnd;
    cuts += 1;
    key = cuts < most ? bytes.indexOf(MANAGED_FIELDS_KEY, kept) : -1;
  }
  parts.push(bytes.toString('utf8', kept));
  return { text: parts.join(''), cuts };
}

/** `JSON.parse` of `text`, or `undefined` for text that is not JSON. */
function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * A watch line as `JSON.parse` reads it, except that `object.metadata.managedFields`, when it is
 * a list, is the number 0. Throws what `JSON.parse` throws for the whole line.
 */
export function parseWithoutManagedFields(line: Buffer): unknown {
  const cut = cutUpTo(line, 1);
  if (cut) {
    const value = parseOrUndefined(cut.text);
    if (typeof value === 'object' && value !== null) {
      if (holdsPlaceholder((value as { object?: unknown }).object)) return value;
    }
  }
  return JSON.parse(line.toString('utf8'));
}

/**
 * A LIST response body as `JSON.parse` reads it, except that each item's
 * `metadata.managedFields`, when it is a list, is the number 0: every value cut must be found
 * in an item's metadata, else the whole body is parsed as it is. Throws what `JSON.parse` throws
 * for the whole body.
 */
export function parseListWithoutManagedFields(body: Buffer): unknown {
  const cut = cutUpTo(body, Number.POSITIVE_INFINITY);
  if (cut) {
    const value = parseOrUndefined(cut.text);
    if (typeof value === 'object' && value !== null) {
      const items = (value as { items?: unknown }).items;
      if (Array.isArray(items)) {
        let found = 0;
        for (const item of items) if (holdsPlaceholder(item)) found += 1;
        if (found === cut.cuts) return value;
      }
    }
  }
  return JSON.parse(body.toString('utf8'));
}
