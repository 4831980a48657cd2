/**
 * Kubernetes label selectors (`app=engine,tier in (a,b),!canary`), checked the way the API server
 * parses them (apimachinery `labels.Parse`), so a selector it would refuse fails at start with a
 * message, instead of the service starting and every LIST being rejected for as long as it runs.
 *
 * Grammar, as the API server reads it:
 *
 *     selector    := requirement ( "," requirement )*
 *     requirement := "!" KEY | KEY [ ("=" | "==" | "!=") VALUE? | ("in" | "notin") "(" VALUE? ( "," VALUE? )* ")" | (">" | "<") INTEGER ]
 *
 * Whitespace separates tokens and is otherwise ignored. A KEY is a qualified name (an optional
 * DNS-subdomain prefix and `/`, then a name of ≤63 alphanumerics, `-`, `_`, `.`, starting and
 * ending alphanumeric); a VALUE has the name's rules or is empty. `in`/`notin` are operators after
 * a key and plain words anywhere else (`in in (in)` is valid). `>`/`<` are part of the grammar
 * upstream (numeric comparison), so they are accepted here too.
 */

type SelectorOperator = 'exists' | '!' | '=' | '==' | '!=' | 'in' | 'notin' | '>' | '<';

/**
 * One parsed requirement, as apimachinery's `labels.Requirement` holds it: the parser returns these
 * so callers (and tests) can see how a selector was read, not only whether it was accepted.
 */
export interface SelectorRequirement {
  key: string;
  operator: SelectorOperator;
  /** Empty for `exists` and `!`; the empty string is a value (`a=` or `a in (,b)`). */
  values: string[];
}

/** Why a selector is not one the API server would accept. The message says where. */
export class LabelSelectorError extends Error {
  override readonly name = 'LabelSelectorError';
}

/** A label name or value: ≤63 characters, alphanumerics and `-_.`, alphanumeric at both ends. */
const NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const MAX_NAME_LENGTH = 63;
/** RFC 1123 subdomain, the form of a key's prefix. */
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const MAX_PREFIX_LENGTH = 253;
/** `>`/`<` values are int64 upstream; a longer run of digits overflows there. */
const MAX_INT64 = 2n ** 63n - 1n;

/** Why `key` is not a valid label key, or `undefined` when it is. */
export function labelKeyProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2) return `key ${JSON.stringify(key)} has more than one '/'`;
  const name = parts.at(-1)!;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix === '') return `key ${JSON.stringify(key)} has an empty prefix before '/'`;
    if (prefix.length > MAX_PREFIX_LENGTH || !DNS_SUBDOMAIN.test(prefix)) {
      return `key ${JSON.stringify(key)} has a prefix that is not a DNS subdomain (≤${MAX_PREFIX_LENGTH} lowercase letters, digits, '-' and '.')`;
    }
  }
  if (name === '') return `key ${JSON.stringify(key)} has an empty name`;
  if (name.length > MAX_NAME_LENGTH || !NAME.test(name)) {
    return `key ${JSON.stringify(key)} has an invalid name ${JSON.stringify(name)} (≤${MAX_NAME_LENGTH} letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`;
  }
  return undefined;
}

/** Why `value` is not a valid label value, or `undefined` when it is (empty is valid). */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > MAX_NAME_LENGTH || !NAME.test(value)) {
    return `value ${JSON.stringify(value)} is not a label value (≤${MAX_NAME_LENGTH} letters, digits, '-', '_' and '.', starting and ending with a letter or digit, or empty)`;
  }
  return undefined;
}

// ----- tokens -----

type Punct = '!' | '=' | '==' | '!=' | '>' | '<' | '(' | ')' | ',';

type Token =
  | { kind: 'word'; text: string; at: number }
  | { kind: 'symbol'; text: Punct; at: number }
  | { kind: 'end'; at: number };

const SYMBOL_CHARS = new Set(['!', '=', '>', '<', '(', ')', ',']);
const WHITESPACE = new Set([' ', '\t', '\r', '\n']);

/**
 * Splits into words and symbols. A word is any run of characters that are neither whitespace nor
 * symbols (what makes it a valid key or value is checked later, so the message can say which).
 * `!=` and `==` are one symbol; any other symbol is one character, so `=!` is `=` then `!`.
 */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (WHITESPACE.has(ch)) {
      i += 1;
    } else if (SYMBOL_CHARS.has(ch)) {
      const two = text.slice(i, i + 2);
      const symbol = (two === '!=' || two === '==' ? two : ch) as Punct;
      tokens.push({ kind: 'symbol', text: symbol, at: i });
      i += symbol.length;
    } else {
      const start = i;
      while (i < text.length && !WHITESPACE.has(text[i]!) && !SYMBOL_CHARS.has(text[i]!)) i += 1;
      tokens.push({ kind: 'word', text: text.slice(start, i), at: start });
    }
  }
  tokens.push({ kind: 'end', at: text.length });
  return tokens;
}

function shown(token: Token): string {
  return token.kind === 'end' ? 'the end' : `'${token.text}'`;
}

// ----- parser -----

/**
 * Parses `text` into its requirements, or throws `LabelSelectorError` naming the first problem and
 * its position (1-based character). The empty selector (everything) parses to no requirements.
 */
export function parseLabelSelector(text: string): SelectorRequirement[] {
  const tokens = tokenize(text);
  let position = 0;
  const peek = (): Token => tokens[position]!;
  const next = (): Token => tokens[position++]!;
  const fail = (token: Token, message: string): never => {
    throw new LabelSelectorError(`at character ${token.at + 1}: ${message}`);
  };
  const isSymbol = (token: Token, ...symbols: Punct[]): boolean =>
    token.kind === 'symbol' && symbols.includes(token.text);
  /** After a requirement, or at the very start: only `,` or the end may follow a whole one. */
  const atBoundary = (token: Token): boolean => token.kind === 'end' || isSymbol(token, ',');

  const checkedKey = (token: Token): string => {
    if (token.kind !== 'word') return fail(token, `expected a label key, found ${shown(token)}`);
    const problem = labelKeyProblem(token.text);
    return problem === undefined ? token.text : fail(token, problem);
  };
  const checkedValue = (token: Token, value: string): string => {
    const problem = labelValueProblem(value);
    return problem === undefined ? value : fail(token, problem);
  };

  /** The value after `=`, `==` or `!=`: a word, or nothing (the empty value) before `,`/end. */
  const exactValue = (): string[] => {
    const token = peek();
    if (atBoundary(token)) return [''];
    if (token.kind !== 'word') return fail(token, `expected a value, found ${shown(token)}`);
    next();
    return [checkedValue(token, token.text)];
  };

  /** `(a,b)`, where any item may be empty: `()`, `(,a)`, `(a,,b)` all hold the empty value. */
  const valueSet = (operator: string): string[] => {
    const open = next();
    if (!isSymbol(open, '(')) {
      return fail(open, `expected '(' after '${operator}', found ${shown(open)}`);
    }
    const values: string[] = [];
    for (;;) {
      const token = peek();
      if (token.kind === 'word') {
        next();
        values.push(checkedValue(token, token.text));
      } else {
        values.push('');
      }
      const separator = next();
      if (isSymbol(separator, ')')) return values;
      if (!isSymbol(separator, ',')) {
        return fail(separator, `expected ',' or ')' in the value list, found ${shown(separator)}`);
      }
    }
  };

  /** The integer after `>` or `<`. */
  const integerValue = (operator: string): string[] => {
    const token = peek();
    if (token.kind !== 'word' || !/^\d+$/.test(token.text) || BigInt(token.text) > MAX_INT64) {
      return fail(token, `expected an integer after '${operator}', found ${shown(token)}`);
    }
    next();
    return [token.text];
  };

  const requirement = (): SelectorRequirement => {
    if (isSymbol(peek(), '!')) {
      next();
      const key = checkedKey(next());
      const after = peek();
      if (!atBoundary(after)) {
        return fail(
          after,
          `'!${key}' takes no operator; expected ',' or the end, found ${shown(after)}`,
        );
      }
      return { key, operator: '!', values: [] };
    }
    const key = checkedKey(next());
    if (atBoundary(peek())) return { key, operator: 'exists', values: [] };
    const op = next();
    if (op.kind === 'word' && (op.text === 'in' || op.text === 'notin')) {
      return { key, operator: op.text, values: valueSet(op.text) };
    }
    if (op.kind === 'symbol' && (op.text === '=' || op.text === '==' || op.text === '!=')) {
      return { key, operator: op.text, values: exactValue() };
    }
    if (op.kind === 'symbol' && (op.text === '>' || op.text === '<')) {
      return { key, operator: op.text, values: integerValue(op.text) };
    }
    return fail(
      op,
      `expected an operator (=, ==, !=, in, notin, >, <), ',' or the end after key '${key}', found ${shown(op)}`,
    );
  };

  const requirements: SelectorRequirement[] = [];
  if (peek().kind === 'end') return requirements;
  for (;;) {
    requirements.push(requirement());
    const after = next();
    if (after.kind === 'end') return requirements;
    if (!isSymbol(after, ',')) {
      return fail(after, `expected ',' or the end after a requirement, found ${shown(after)}`);
    }
    if (peek().kind === 'end') fail(peek(), "expected a requirement after ',', found the end");
  }
}

// ----- matching -----

/** A label value as apimachinery's `Requirement.Matches` reads it for `>`/`<`: an int64, or none. */
const INTEGER = /^[+-]?\d+$/;

/**
 * Whether `labels` satisfy every requirement, as apimachinery's `Requirement.Matches` decides:
 * `!=` and `notin` also match a label that is absent; `>`/`<` compare as integers and never match
 * a value that is not one. The reflector's main side uses it to drop a watch event for a pod the
 * selector does not select, which only a broken server or a proxy sends (the WATCH asked the
 * server for the selector).
 */
export function matchesLabelSelector(
  requirements: readonly SelectorRequirement[],
  labels: Readonly<Record<string, string>>,
): boolean {
  for (const { key, operator, values } of requirements) {
    const has = Object.hasOwn(labels, key);
    const value = has ? labels[key]! : undefined;
    switch (operator) {
      case 'exists':
        if (!has) return false;
        break;
      case '!':
        if (has) return false;
        break;
      case '=':
      case '==':
      case 'in':
        if (value === undefined || !values.includes(value)) return false;
        break;
      case '!=':
      case 'notin':
        if (value !== undefined && values.includes(value)) return false;
        break;
      case '>':
      case '<': {
        if (value === undefined || !INTEGER.test(value)) return false;
        const left = BigInt(value);
        // Beyond int64 apimachinery's ParseInt fails, and the requirement does not match.
        if (left > MAX_INT64 || left < -MAX_INT64 - 1n) return false;
        const right = BigInt(values[0] ?? '0');
        if (operator === '>' ? !(left > right) : !(left < right)) return false;
        break;
      }
    }
  }
  return true;
}
