/**
 * `GET /api/v1/events?types=`: the list of event types a client asks for, parsed in one pass.
 *
 * The value is client input of any length, so it is never matched with a backtracking regular
 * expression: the first version did, and two adjacent space quantifiers inside a repeated group
 * let a 127-byte query freeze the process for seconds. Here the value is split on commas and each
 * entry looked up in a set, linear in its length. The pattern published in the OpenAPI document
 * (for clients and fuzzers) describes the same language without ambiguity — every repetition
 * starts with a comma, every optional type with a letter — so a backtracking engine that runs it
 * is linear too; test/routes/events-types.test.ts holds the two to the same answers.
 */

/** Longest piece of a client's value quoted back in an error: enough to recognise it, bounded. */
const QUOTED_INPUT_LENGTH = 64;
/** Unknown entries named in one error; the rest are counted. */
const QUOTED_ENTRIES = 3;

/** `text` as a JSON string, cut to `QUOTED_INPUT_LENGTH` characters with the rest counted. */
function quoteInput(text: string): string {
  if (text.length <= QUOTED_INPUT_LENGTH) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTED_INPUT_LENGTH))}… (${text.length - QUOTED_INPUT_LENGTH} more characters)`;
}

function escapeForPattern(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The published pattern: known types separated by commas, spaces around them, empty entries
 * allowed. Unambiguous (see the module comment), so linear in any engine that runs it.
 */
export function eventTypesPattern(known: Iterable<string>): string {
  const type = `(?:${[...known].map(escapeForPattern).join('|')})`;
  return `^ *(?:${type} *)?(?:, *(?:${type} *)?)*$`;
}

/** Cuts the spaces (only U+0020, as the pattern allows) off both ends of `text`. */
function trimSpaces(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && text.charCodeAt(start) === 0x20) start += 1;
  while (end > start && text.charCodeAt(end - 1) === 0x20) end -= 1;
  return text.slice(start, end);
}

/**
 * The result of parsing `?types=`: the types in order, or a message the route sends as a 400, so a
 * typo is answered with what was wrong rather than an empty stream.
 */
type EventTypesParse = { ok: true; types: string[] } | { ok: false; message: string };

/**
 * Parses `text` against `known`: the types named, in order, or a message saying what is wrong
 * (unknown types, or a separator other than a comma), quoting at most a bounded part of `text`.
 */
export function parseEventTypes(text: string, known: ReadonlySet<string>): EventTypesParse {
  const types: string[] = [];
  const unknown: string[] = [];
  let badSeparator = false;
  for (const raw of text.split(',')) {
    const entry = trimSpaces(raw);
    if (entry === '') continue;
    if (known.has(entry)) {
      types.push(entry);
      continue;
    }
    // A known type with a tab or a newline around it: the separator is wrong, not the type.
    const loose = entry.trim();
    if (loose === '' || known.has(loose)) badSeparator = true;
    else unknown.push(loose);
  }
  const knownList = [...known].join(', ');
  if (unknown.length > 0) {
    const named = unknown.slice(0, QUOTED_ENTRIES).map(quoteInput).join(', ');
    const more =
      unknown.length > QUOTED_ENTRIES ? ` and ${unknown.length - QUOTED_ENTRIES} more` : '';
    return { ok: false, message: `unknown event type ${named}${more}; known: ${knownList}` };
  }
  if (badSeparator) {
    return {
      ok: false,
      message: `event types must be separated by commas (spaces allowed), got ${quoteInput(text)}; known: ${knownList}`,
    };
  }
  return { ok: true, types };
}
