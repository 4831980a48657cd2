/**
 * scripts/fill-compile-cache.mjs, which the Dockerfile runs so that the image's first start loads
 * compiled code: after it, loading the service's modules compiles nothing new. Seen from outside:
 * Node writes an entry to the cache for every module it had to compile, so a process that loads
 * the service's modules from a filled cache adds none (but its own probe script).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const script = join(root, 'scripts/fill-compile-cache.mjs');

/** What the service loads on its way to ready: the command, the assembly, HTTP, the kubernetes source's bundles. */
const SERVICE_MODULES = [
  'src/cli/service-command.js',
  'src/service/assemble.js',
  'src/http/app.js',
  'src/http/probe-app.js',
  'src/kubernetes/client/connection.js',
  'src/kubernetes/reflector-worker/main-thread-source.js',
];
const SERVICE_BUNDLES = ['workers/reflector.worker.cjs', 'vendor/client-node-kubeconfig.cjs'];

const works: string[] = [];
afterEach(() => {
  for (const work of works.splice(0)) rmSync(work, { recursive: true, force: true });
});

beforeAll(() => {
  if (!existsSync(join(root, 'dist/workers/reflector.worker.cjs')))
    throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
});

function scratch(): string {
  const work = mkdtempSync(join(tmpdir(), 'pool-controller-fill-cache-'));
  works.push(work);
  return work;
}

/** Runs `node args` in the repository with `NODE_COMPILE_CACHE` set to `cache` (or unset). */
function node(args: string[], cache: string | undefined) {
  const { NODE_COMPILE_CACHE: _ignored, ...env } = process.env;
  return spawnSync(process.execPath, args, {
    cwd: root,
    env: cache === undefined ? env : { ...env, NODE_COMPILE_CACHE: cache },
    encoding: 'utf8',
  });
}

/** How many entries the cache directory holds (Node keeps them one level down, per version and user). */
function entries(cache: string): number {
  if (!existsSync(cache)) return 0;
  return readdirSync(cache, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
    .length;
}

/** Loads the service's modules in a fresh process using `cache`; returns how many entries that added. */
function entriesAddedByLoadingTheService(cache: string): number {
  const probe = join(scratch(), 'load-service.mjs');
  const dist = join(root, 'dist');
  writeFileSync(
    probe,
    [
      "import { createRequire } from 'node:module';",
      ...SERVICE_MODULES.map((m) => `await import(${JSON.stringify(join(dist, m))});`),
      `const require = createRequire(${JSON.stringify(join(dist, 'package.json'))});`,
      ...SERVICE_BUNDLES.map((b) => `require(${JSON.stringify(join(dist, b))});`),
    ].join('\n'),
  );
  const before = entries(cache);
  const run = node([probe], cache);
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  return entries(cache) - before;
}

describe('scripts/fill-compile-cache.mjs', () => {
  it('fills the cache so that loading the service compiles nothing but the loader itself', () => {
    const cache = join(scratch(), 'cache');
    const fill = node([script], cache);
    expect(fill.stderr).toBe('');
    expect(fill.status).toBe(0);
    expect(fill.stdout).toContain('fill-compile-cache:');
    // The probe script is the one file the filled cache cannot know.
    expect(entriesAddedByLoadingTheService(cache)).toBeLessThanOrEqual(1);
  });

  it('is what makes the difference: from an empty cache the same loading compiles hundreds of modules', () => {
    expect(entriesAddedByLoadingTheService(join(scratch(), 'cache'))).toBeGreaterThan(300);
  });

  it('refuses to run without NODE_COMPILE_CACHE, naming it', () => {
    const fill = node([script], undefined);
    expect(fill.status).toBe(1);
    expect(fill.stderr).toContain('NODE_COMPILE_CACHE is not set');
  });
});
