/**
 * ARCHITECTURE.md's rule for `routes/`: a plugin may use the service's public objects, never its
 * internals. The public surface is the `ControlPlane` a plugin receives as an option; the only
 * module of the project a route may import is the one that declares it. Everything a route needs
 * (store snapshots, cell lookups, health reports, the admin decision) comes through that object.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleReferences } from '../support/import-specifiers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ROUTES = join(ROOT, 'routes');

/** The project modules outside `routes/` that routes may import, relative to the repository root. */
const ALLOWED_PROJECT_MODULES = ['src/service/control-plane.ts'];

/** Every module specifier in `source`; a computed `import(…)`/`require(…)` counts as `<computed>`. */
function specifiers(source: string): string[] {
  return moduleReferences(source).map((reference) => reference.specifier);
}

/**
 * The project modules a file in `routes/` (at `file`, relative to `routes/`) imports that it may
 * not, as repository paths. Package imports (`fastify`, `zod`) are not the project's internals;
 * other files in `routes/` are fine, and are checked themselves.
 */
function violations(source: string, file = 'plugin.ts'): string[] {
  const bad: string[] = [];
  for (const specifier of specifiers(source)) {
    if (specifier === '<computed>' || specifier.includes('${')) {
      bad.push(`a computed import (${specifier})`);
      continue;
    }
    if (!specifier.startsWith('.') && !specifier.startsWith('/')) continue;
    const from = dirname(join(ROUTES, file));
    const target = relative(ROOT, resolve(from, specifier)).replace(/\.js$/, '.ts');
    if (target.startsWith('routes/')) continue;
    if (!ALLOWED_PROJECT_MODULES.includes(target)) bad.push(target);
  }
  return bad;
}

const routeFiles = (readdirSync(ROUTES, { recursive: true }) as string[])
  .filter((name) => /\.[cm]?[jt]s$/.test(name))
  .sort();

describe('routes/ imports only the public control plane', () => {
  it('finds the route plugins to check', () => {
    expect(routeFiles).toEqual(
      expect.arrayContaining(['cells.ts', 'health.ts', 'requeue.ts', 'store.ts', 'cell-lookup.ts']),
    );
  });

  for (const name of routeFiles) {
    it(`routes/${name} imports nothing of the project but ${ALLOWED_PROJECT_MODULES.join(', ')}`, () => {
      expect(violations(readFileSync(join(ROUTES, name), 'utf8'), name)).toEqual([]);
    });
  }

  it('sees the control plane import every plugin has (the check reads real imports)', () => {
    const plane = specifiers(readFileSync(join(ROUTES, 'store.ts'), 'utf8'));
    expect(plane).toContain('../src/service/control-plane.js');
  });

  const forms: Array<[string, string]> = [
    ["import { podKey } from '../src/model/pod.js';", 'src/model/pod.ts'],
    [
      "import type { ParentKey } from '../src/runtime/source-event.js';",
      'src/runtime/source-event.ts',
    ],
    [
      "import {\n  cellKeyMap,\n  splitParentKey,\n} from '../src/pools/cell-key.js';",
      'src/pools/cell-key.ts',
    ],
    ["export { memberOf } from '../src/pools/cell-state.js';", 'src/pools/cell-state.ts'],
    ["export * from '../src/service/health.js';", 'src/service/health.ts'],
    ["import '../workers/reflector.worker.js';", 'workers/reflector.worker.ts'],
    ["const lazy = await import('../src/service/admin-auth.js');", 'src/service/admin-auth.ts'],
    [
      'const { authorizeAdmin } = require("../src/service/admin-auth.js");',
      'src/service/admin-auth.ts',
    ],
    ["import { outside } from '../src/pools/labels.js';", 'src/pools/labels.ts'],
    [
      'const m = await import(`../src/\u0024{name}.js`);',
      'a computed import (../src/\u0024{name}.js)',
    ],
    ['const m = await import(path);', 'a computed import (<computed>)'],
  ];
  for (const [source, violation] of forms) {
    it(`flags ${JSON.stringify(source)}`, () => {
      expect(violations(source)).toEqual([violation]);
    });
  }

  it('lets through the control plane, sibling files and packages', () => {
    expect(
      violations(`
        import type { ControlPlane } from '../src/service/control-plane.js';
        import { HttpError } from './http-error.js';
        import { helper } from './nested/helper.js';
        import { z } from 'zod';
        import type { FastifyReply } from 'fastify';
      `),
    ).toEqual([]);
  });
});
