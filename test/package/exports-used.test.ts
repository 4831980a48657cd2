/**
 * "Export only what another module imports": a name exported from src/, routes/ or workers/ must be
 * imported by some other module of the project (src, routes, workers, test, bench, scripts,
 * examples), or be one of the package's public entries (package.json "exports"). An export no one
 * imports is a promise to nobody that still has to be kept, and it hides dead code from review.
 *
 * Declarations come from the compiler (test/support/exported-declarations.ts); imports from the
 * import clauses' text: named imports and re-exports, `export *` followed to the module it forwards,
 * and (conservatively) every word of a file that imports a module as a namespace or dynamically.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { exportedDeclarations } from '../support/exported-declarations.js';

const root = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const COVERED = /^(src|routes|workers)\/.+(?<!\.d)\.ts$/;
const READERS = ['src', 'routes', 'workers', 'test', 'bench', 'scripts', 'examples'];
const READABLE = /\.(ts|mts|mjs|js)$/;

/** The public entries: everything they declare is the package's API. */
function publicEntries(): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, { default: string }>;
  };
  return Object.values(pkg.exports).map((entry) =>
    entry.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'),
  );
}

function readerFiles(): string[] {
  return READERS.flatMap((dir) =>
    (readdirSync(join(root, dir), { recursive: true }) as string[])
      .map((name) => `${dir}/${name.split('\\').join('/')}`)
      .filter((file) => READABLE.test(file) && !file.includes('node_modules')),
  );
}

/**
 * `'./x.js'` from `src/a/b.ts` → `src/a/x.ts`; a built path (`dist/src/…js`, also as a child
 * process's script names it, from the project's root) → its source.
 */
function resolve(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const built = /(?:^|\/)dist\/((?:src|routes|workers)\/.+)$/.exec(specifier);
  const path = built
    ? built[1]!
    : normalize(join(dirname(from), specifier))
        .split('\\')
        .join('/');
  const source = path.replace(/\.(m?js)$/, '.ts');
  return COVERED.test(source) ? source : undefined;
}

interface Imports {
  /** file → names imported from it by name (`import { a }`, `export { a } from`). */
  named: Map<string, Set<string>>;
  /** file → the files that forward all of it (`export * from`). */
  forwardedBy: Map<string, Set<string>>;
  /** file → texts of files that import it whole (namespace or dynamic import). */
  whole: Map<string, string[]>;
}

const NAMED = /\b(import|export)\s+(?:type\s+)?([\w$]+\s*,\s*)?\{([^}]*)\}\s*from\s*(['"])(.+?)\4/g;
const STAR_EXPORT = /\bexport\s+\*\s+from\s*(['"])(.+?)\1/g;
const WHOLE = /\bimport\s+\*\s+as\s+[\w$]+\s+from\s*(['"])(.+?)\1|\bimport\s*\(\s*(['"])(.+?)\3/g;

function collectImports(files: string[]): Imports {
  const imports: Imports = { named: new Map(), forwardedBy: new Map(), whole: new Map() };
  const add = <V>(map: Map<string, V[] | Set<V>>, key: string, value: V) => {
    const bucket = map.get(key) ?? new Set<V>();
    if (bucket instanceof Set) bucket.add(value);
    else bucket.push(value);
    map.set(key, bucket);
  };
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const match of text.matchAll(NAMED)) {
      const target = resolve(file, match[5]!);
      if (!target || target === file) continue;
      for (const item of match[3]!.split(',')) {
        const name = item
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+/)[0]!
          .trim();
        if (name) add(imports.named as Map<string, Set<string>>, target, name);
      }
    }
    for (const match of text.matchAll(STAR_EXPORT)) {
      const target = resolve(file, match[2]!);
      if (target) add(imports.forwardedBy as Map<string, Set<string>>, target, file);
    }
    for (const match of text.matchAll(WHOLE)) {
      const target = resolve(file, match[2] ?? match[4]!);
      if (target && target !== file) {
        imports.whole.set(target, [...(imports.whole.get(target) ?? []), text]);
      }
    }
  }
  return imports;
}

/** Whether another module imports `name` from `file`, directly or through an `export *`. */
function imported(imports: Imports, file: string, name: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  if (imports.named.get(file)?.has(name)) return true;
  const word = new RegExp(`\\b${name.replace(/\$/g, '\\$')}\\b`);
  if ((imports.whole.get(file) ?? []).some((text) => word.test(text))) return true;
  return [...(imports.forwardedBy.get(file) ?? [])].some(
    (forwarder) => publicEntries().includes(forwarder) || imported(imports, forwarder, name, seen),
  );
}

describe('exports', () => {
  it('are imported by another module, or are the public entries', () => {
    const entries = publicEntries();
    const { declarations } = exportedDeclarations({ cwd: root, config: 'tsconfig.json' }, (file) =>
      COVERED.test(file),
    );
    const imports = collectImports(readerFiles());
    const unused = declarations
      // workers/ are entry points piscina loads by path; their default export is for it.
      .filter((d) => !entries.includes(d.file) && !d.file.startsWith('workers/'))
      .flatMap((d) => d.name.split(', ').map((name) => ({ ...d, name })))
      .filter((d) => !imported(imports, d.file, d.name))
      .map((d) => `${relative(root, join(root, d.file))}:${d.line} ${d.kind} ${d.name}`);
    expect(unused).toEqual([]);
  });
});
