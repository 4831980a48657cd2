/**
 * Every kind of string JSON and UTF-8 treat specially, and some they do not: escapes, controls,
 * non-ASCII, surrogate pairs and lone surrogates (which UTF-8 carries as U+FFFD), the line and
 * paragraph separators, markup, a key that is an array index. For the tests of every writer and
 * reader of pods' JSON.
 */
export const AWKWARD_STRINGS: readonly string[] = [
  '',
  'plain',
  'quote " and backslash \\',
  'controls \u0000\u0001\b\t\n\u000b\f\r\u001f and DEL \u007f',
  'héllo ✓ 日本語',
  'emoji 🚀 pair',
  'lone high \ud800 surrogate',
  'lone low \udc00 surrogate',
  'separators \u2028\u2029',
  '</script>',
  '10',
];
