/**
 * The one import parser both boundary tests use (test/package/import-boundaries.test.ts for the
 * folder layering, test/routes/imports.test.ts for the routes' control-plane-only rule), so a form
 * of import one of them learns to see, the other sees too.
 *
 * It reads raw text, comments included: a comment can only add a false alarm, never hide an
 * import. (The project's TypeScript is the native compiler, which has no JavaScript API to parse
 * with.) The forms: `import … from '…'`, `export … from '…'`, `import '…'`, `import('…')` and
 * `require('…')`; a computed `import(…)`/`require(…)` is reported as `<computed>`.
 */

export interface ModuleReference {
  specifier: string;
  /** `import type …` / `export type …`: erased at compile time, so no runtime dependency. */
  typeOnly: boolean;
}

const STATIC_FORM = /\b(?:import|export)\s+(type\s+)?[^'"`;]*?\bfrom\s*(['"])(.+?)\2/g;
const SIDE_EFFECT_FORM = /\bimport\s*(['"])(.+?)\1/g;
const CALL_FORM = /\b(?:import|require)\s*\(\s*(['"`])(.+?)\1/g;
const ANY_CALL = /\b(?:import|require)\s*\(\s*([^\s)])/g;

export function moduleReferences(source: string): ModuleReference[] {
  const found: ModuleReference[] = [];
  for (const match of source.matchAll(STATIC_FORM)) {
    found.push({ specifier: match[3]!, typeOnly: match[1] !== undefined });
  }
  for (const match of source.matchAll(SIDE_EFFECT_FORM)) {
    found.push({ specifier: match[2]!, typeOnly: false });
  }
  for (const match of source.matchAll(CALL_FORM)) {
    found.push({ specifier: match[2]!, typeOnly: false });
  }
  for (const match of source.matchAll(ANY_CALL)) {
    if (!['"', "'", '`'].includes(match[1]!))
      found.push({ specifier: '<computed>', typeOnly: false });
  }
  return found;
}
