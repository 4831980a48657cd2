/**
 * Installing from git, as the README says: `npm install git+file://<a clone>` into a fresh project.
 * npm prepares a git dependency by installing its dependencies in its own clone and running its
 * `prepare` script (not `prepack`), then packs it; without `prepare` the package arrived with no
 * dist/ and `import('pool-controller')` failed (issue 41). The clone is of this checkout's HEAD.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The clone's own install (every dev dependency, from the cache where it can be) and its build, on
 * a loaded 2-core machine: about 75 s measured there.
 */
const INSTALL_TIMEOUT_MS = 600_000;

function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stderr}`);
  }
  return result.stdout;
}

describe('the package installed from git', () => {
  let work: string;
  let project: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'pool-controller-git-'));
    const clone = join(work, 'clone');
    run('git', ['clone', '--quiet', root, clone], work);
    project = join(work, 'consumer');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
    );
    run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-package-lock',
        `git+file://${clone}`,
      ],
      project,
    );
  }, INSTALL_TIMEOUT_MS + 60_000);
  // Removing the clone and the installed tree takes a while on a loaded machine.
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  }, 120_000);

  it('arrives built: dist/ with the entry points, the worker and the bundled client', () => {
    const installed = join(project, 'node_modules', 'pool-controller');
    for (const file of [
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/main.js',
      'dist/workers/reflector.worker.cjs',
      'dist/vendor/client-node-kubeconfig.cjs',
    ]) {
      expect(existsSync(join(installed, file)), file).toBe(true);
    }
  });

  it('imports by its name, and its command runs', () => {
    const imported = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('pool-controller'); console.log(typeof m.ReconcileLoop);",
      ],
      { cwd: project, encoding: 'utf8', timeout: 30_000 },
    );
    expect(imported.stderr).toBe('');
    expect(imported.stdout.trim()).toBe('function');
    const version = spawnSync(
      process.execPath,
      [join(project, 'node_modules', '.bin', 'pool-controller'), '--version'],
      { cwd: project, encoding: 'utf8', timeout: 30_000 },
    );
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/0\.1\.0/);
  });
});
