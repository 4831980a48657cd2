/**
 * ARCHITECTURE.md's layering, enforced: a file's folder says what it may import.
 * runtime ← coordination ← model ← kubernetes ← sinks ← service (cli, service, http, main), with
 * pools beside kubernetes (both on model, neither on the other), and
 * only src/kubernetes/client/connection.ts may import @kubernetes/client-node. (routes/ has its own,
 * stricter check in test/routes/imports.test.ts; both read imports with one parser.)
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleReferences } from '../support/import-specifiers.js';

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
  if (!existsSync(join(root, dir))) return out;
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

function importsOf(file: string): ImportRecord[] {
  return moduleReferences(readFileSync(join(root, file), 'utf8')).map(({ specifier, typeOnly }) => {
    const target = specifier.startsWith('.')
      ? relative(root, resolve(root, dirname(file), specifier))
      : undefined;
    return { file, specifier, typeOnly, ...(target ? { target } : {}) };
  });
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

/** Folders of the library layers; everything else under src/ is the service, which may import all. */
const LIBRARY_FOLDERS = [
  'src/runtime',
  'src/coordination',
  'src/model',
  'src/kubernetes',
  'src/pools',
  'src/simulated',
  'src/sinks',
];

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

  it('lets src/coordination import only the runtime and itself', () => {
    expect(
      violations(
        'src/coordination',
        (r) => isNodeBuiltin(r) || within(r, 'src/runtime', 'src/coordination'),
      ),
    ).toEqual([]);
  });

  it('lets src/model import only types from the runtime, and zod', () => {
    expect(
      violations(
        'src/model',
        (r) =>
          // zod or one of its entry points (the pod schema uses zod/mini: see src/model/pod.ts).
          r.specifier === 'zod' ||
          r.specifier.startsWith('zod/') ||
          within(r, 'src/model') ||
          (r.typeOnly && within(r, 'src/runtime')),
      ),
    ).toEqual([]);
  });

  it('lets src/kubernetes import only the runtime, coordination, model, itself and its libraries', () => {
    const libraries = ['zod', 'piscina', '@kubernetes/client-node'];
    expect(
      violations(
        'src/kubernetes',
        (r) =>
          isNodeBuiltin(r) ||
          libraries.includes(r.specifier) ||
          within(r, 'src/runtime', 'src/coordination', 'src/model', 'src/kubernetes'),
      ).filter(
        // The one computed import: connection.ts loading the build's bundle of client-node
        // (dist/vendor/client-node-kubeconfig.cjs), which has no source file to name.
        (violation) => violation !== "src/kubernetes/client/connection.ts: import '<computed>'",
      ),
    ).toEqual([]);
  });

  it('lets src/pools import the runtime and the model, and nothing from src/kubernetes', () => {
    expect(
      violations(
        'src/pools',
        (r) => isNodeBuiltin(r) || within(r, 'src/runtime', 'src/model', 'src/pools'),
      ),
    ).toEqual([]);
  });

  it('lets src/simulated import the runtime, the model and pool labels, never Kubernetes', () => {
    expect(
      violations(
        'src/simulated',
        (r) =>
          isNodeBuiltin(r) || within(r, 'src/runtime', 'src/model', 'src/pools', 'src/simulated'),
      ),
    ).toEqual([]);
  });

  it('lets src/sinks import coordination, pools, kubernetes and the runtime, never the service', () => {
    expect(
      violations(
        'src/sinks',
        (r) =>
          isNodeBuiltin(r) ||
          within(
            r,
            'src/runtime',
            'src/coordination',
            'src/model',
            'src/kubernetes',
            'src/pools',
            'src/sinks',
          ),
      ),
    ).toEqual([]);
  });

  it('keeps every library layer off the service folders, routes and workers', () => {
    const library = LIBRARY_FOLDERS.filter((dir) => existsSync(join(root, dir)));
    const serviceSide = ['src/cli', 'src/service', 'src/http', 'src/main', 'routes', 'workers'];
    const upward = library.flatMap((dir) =>
      violations(dir, (r) => !within(r, ...serviceSide) && r.target !== 'src/index.js'),
    );
    expect(upward).toEqual([]);
  });

  it('imports @kubernetes/client-node only from src/kubernetes/client/connection.ts', () => {
    const importers = ['src', 'workers', 'routes']
      .flatMap(sourceFiles)
      .flatMap(importsOf)
      .filter((r) => r.specifier.startsWith('@kubernetes/'))
      .map((r) => r.file);
    expect([...new Set(importers)]).toEqual(['src/kubernetes/client/connection.ts']);
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
