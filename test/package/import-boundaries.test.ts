/**
 * ARCHITECTURE.md's layering, enforced: a file's folder says what it may import.
 * runtime ← kubernetes ← pools ← routes/main, and only src/kubernetes/api.ts may import
 * @kubernetes/client-node. (routes/ has its own check in test/routes.)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface ImportRecord {
  file: string;
  specifier: string;
  /** Resolved path relative to the project root, for relative specifiers. */
  target?: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const STATIC_IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC_IMPORT = /import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): ImportRecord[] {
  const text = readFileSync(join(root, file), 'utf8');
  const records: ImportRecord[] = [];
  const add = (specifier: string, typeOnly: boolean): void => {
    const target = specifier.startsWith('.')
      ? relative(root, resolve(root, dirname(file), specifier))
      : undefined;
    records.push({ file, specifier, typeOnly, ...(target ? { target } : {}) });
  };
  for (const match of text.matchAll(STATIC_IMPORT)) {
    add(match[3] as string, match[2] !== undefined);
  }
  for (const match of text.matchAll(DYNAMIC_IMPORT)) add(match[1] as string, false);
  return records;
}

function violations(dir: string, allowed: (record: ImportRecord) => boolean): string[] {
  return sourceFiles(dir)
    .flatMap(importsOf)
    .filter((record) => !allowed(record))
    .map((r) => `${r.file}: ${r.typeOnly ? 'import type' : 'import'} '${r.specifier}'`);
}

const isNodeBuiltin = (r: ImportRecord): boolean => r.specifier.startsWith('node:');
const within = (r: ImportRecord, ...dirs: string[]): boolean =>
  r.target !== undefined && dirs.some((d) => r.target === d || r.target?.startsWith(`${d}/`));

describe('import boundaries (ARCHITECTURE.md)', () => {
  it('finds the imports it checks', () => {
    // Guards the parser itself: a regex that matched nothing would make every rule pass.
    const records = importsOf('src/runtime/reconcile-loop.ts');
    expect(records.map((r) => r.target)).toContain('src/runtime/object-store.js');
    expect(records.some((r) => r.typeOnly)).toBe(true);
  });

  it('keeps src/runtime free of anything outside it', () => {
    expect(violations('src/runtime', (r) => isNodeBuiltin(r) || within(r, 'src/runtime'))).toEqual(
      [],
    );
  });

  it('lets src/kubernetes import only the runtime, itself and its libraries', () => {
    const libraries = ['zod', 'piscina', '@kubernetes/client-node'];
    expect(
      violations(
        'src/kubernetes',
        (r) =>
          isNodeBuiltin(r) ||
          libraries.includes(r.specifier) ||
          within(r, 'src/runtime', 'src/kubernetes'),
      ),
    ).toEqual([]);
  });

  it('lets src/pools import the runtime and only types from src/kubernetes', () => {
    expect(
      violations(
        'src/pools',
        (r) =>
          isNodeBuiltin(r) ||
          within(r, 'src/runtime', 'src/pools') ||
          (r.typeOnly && within(r, 'src/kubernetes')),
      ),
    ).toEqual([]);
  });

  it('imports @kubernetes/client-node only from src/kubernetes/api.ts', () => {
    const importers = ['src', 'workers', 'routes']
      .flatMap(sourceFiles)
      .flatMap(importsOf)
      .filter((r) => r.specifier.startsWith('@kubernetes/'))
      .map((r) => r.file);
    expect([...new Set(importers)]).toEqual(['src/kubernetes/api.ts']);
  });

  it('keeps the worker entry on src/kubernetes and runtime types', () => {
    expect(
      violations(
        'workers',
        (r) => within(r, 'src/kubernetes') || (r.typeOnly && within(r, 'src/runtime')),
      ),
    ).toEqual([]);
  });
});
