/**
 * The package as a user gets it: `npm pack` of this build, installed into a fresh temporary
 * project (from the npm cache where it can be, `--prefer-offline`), imported by its name, a
 * ReconcileLoop run over a kind of the project's own (installed-consumer.mjs), and the installed
 * `pool-controller` command run. `npm test` builds first, so the pack skips its `prepack` build
 * (a second full build here); that `prepack` builds from a clean `dist/` is checked on its own.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Packing, and installing a handful of dependencies from the cache, on a loaded 2-core machine. */
const NPM_TIMEOUT_MS = 120_000;

/** What `npm pack --json` says of the tarball. */
interface PackResult {
  filename: string;
  files: Array<{ path: string }>;
  unpackedSize: number;
}

function npm(args: string[], cwd: string): string {
  const result = spawnSync('npm', args, { cwd, encoding: 'utf8', timeout: NPM_TIMEOUT_MS });
  if (result.status !== 0) {
    throw new Error(`npm ${args.join(' ')} failed (${result.status}):\n${result.stderr}`);
  }
  return result.stdout;
}

/** The folders and files a package may ship: what runs, and what describes it. */
const SHIPPED =
  /^(dist\/(src|routes|workers|vendor)\/.+\.(js|cjs|d\.ts)|dist\/routes\/status-page\/assets\.json|dist\/build-info\.json|README\.md|LICENSE|openapi\.yaml|package\.json)$/;

describe('the packed package, installed into a fresh project', () => {
  let work: string;
  let project: string;
  let packed: PackResult;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'pool-controller-pack-'));
    packed = (
      JSON.parse(
        npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], root),
      ) as PackResult[]
    )[0]!;
    project = join(work, 'consumer');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
    );
    npm(
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-package-lock',
        join(work, packed.filename),
      ],
      project,
    );
    copyFileSync(
      fileURLToPath(new URL('installed-consumer.mjs', import.meta.url)),
      join(project, 'consumer.mjs'),
    );
  }, 2 * NPM_TIMEOUT_MS);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships only what runs: compiled code, the worker, the bundles, the status page assets, build info, README, LICENSE, openapi.yaml', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths.filter((p) => !SHIPPED.test(p))).toEqual([]);
    for (const needed of [
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/main.js',
      'dist/workers/reflector.worker.cjs',
      'dist/vendor/client-node-kubeconfig.cjs',
      'dist/routes/status-page/assets.json',
      'dist/build-info.json',
      'README.md',
      'LICENSE',
      'openapi.yaml',
    ]) {
      expect(paths).toContain(needed);
    }
  });

  it('installs without @kubernetes/client-node (its KubeConfig is bundled)', () => {
    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules/pool-controller/package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(Object.keys(installed.dependencies)).not.toContain('@kubernetes/client-node');
    const resolved = spawnSync(
      process.execPath,
      [
        '-e',
        "import('@kubernetes/client-node').then(() => console.log('found'), () => console.log('absent'))",
      ],
      { cwd: project, encoding: 'utf8', timeout: 30_000 },
    );
    expect(resolved.stdout.trim()).toBe('absent');
  });

  it('runs a ReconcileLoop over a resource of its own, imported by the package name', () => {
    const result = spawnSync(process.execPath, ['consumer.mjs'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual([
      'ci: compile-1=running compile-2=queued',
      'nightly: nightly-1=queued',
      'ci: compile-2=queued',
      'done',
    ]);
  });

  it('resolves the typed ./runtime and ./pods entries by the package name', () => {
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules/pool-controller/package.json'), 'utf8'),
    ) as { exports: Record<string, { types: string; default: string }> };
    for (const entry of ['./runtime', './pods']) {
      expect(manifest.exports[entry]?.types).toMatch(/\.d\.ts$/);
    }
    const resolved = spawnSync(
      process.execPath,
      [
        '-e',
        "Promise.all([import('pool-controller/runtime'), import('pool-controller/pods')]).then(([r, p]) => console.log(typeof r.ReconcileLoop, typeof p.WorkerPodSource))",
      ],
      { cwd: project, encoding: 'utf8', timeout: 30_000 },
    );
    expect({ stdout: resolved.stdout.trim(), stderr: resolved.stderr }).toEqual({
      stdout: 'function function',
      stderr: '',
    });
  });

  it('installs the pool-controller command, which prints its help', () => {
    const result = spawnSync(join(project, 'node_modules/.bin/pool-controller'), ['--help'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: pool-controller/);
    expect(result.stdout).toContain('--source kubernetes|simulated');
  });

  it('builds from a clean dist/ when packed from a git checkout (prepack)', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    // npm runs prepack when it packs a git dependency (after installing its dev dependencies);
    // every build starts by emptying dist/, so nothing stale is packed.
    expect(manifest.scripts.prepack).toBe('npm run build');
    expect(manifest.scripts.build).toMatch(/^node -e "fs\.rmSync\('dist'.*&& tsc /);
  });
});
