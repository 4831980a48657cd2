/**
 * `@pool-controller/runtime` as a user gets it (issue 39 item 3): assembled from this build by
 * scripts/pack-runtime.mjs, packed, and installed alone into a fresh project. It must install as
 * one package with no dependencies, well under a megabyte or two where `pool-controller` pulls
 * 80 packages and 37 MB, run a loop over a resource of the project's own, run docs/library.md's
 * polling example (which exits by itself, warns once without a logger, and gives up within its
 * `syncTimeoutMs`), type-check under strict settings, and offer the pod source (`./pods`) once
 * its two optional peers are added.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningChild, startNodeChild } from '../support/running-child.js';
import { finishes, until } from '../support/until.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const NAME = '@pool-controller/runtime';

/** Packing, and installing from the npm cache, on a loaded 2-core machine. */
const NPM_TIMEOUT_MS = 120_000;
/**
 * The installed runtime's ceiling: ~1.1 MB today, most of it the pod source's worker bundle and
 * vendored KubeConfig loader; twice that would mean something large crept in.
 */
const MAX_INSTALLED_BYTES = 2 * 1024 * 1024;
/** The polling example's own `SYNC_TIMEOUT_MS`. */
const SYNC_TIMEOUT_MS = 5_000;
/** A child's start and exit on a loaded two-core machine, on top of what it waits for itself. */
const SLACK_MS = 10_000;

function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: NPM_TIMEOUT_MS });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}${result.stderr}`,
    );
  }
  return result.stdout;
}

/** Apparent size of every file under `dir`, as `du -sb` counts it. */
function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

/** A built example or fixture, copied into the project with its import pointed at the package. */
function copyImporting(from: string, to: string, specifier: RegExp): void {
  const text = readFileSync(from, 'utf8');
  const rewritten = text.replace(specifier, `'${NAME}'`);
  if (rewritten === text) throw new Error(`${from} does not import ${specifier}`);
  writeFileSync(to, rewritten);
}

const children: ChildProcess[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function start(cwd: string, args: string[]): RunningChild {
  const running = startNodeChild(args, cwd);
  children.push(running.child);
  return running;
}

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A loopback port with no listener: every connection to it is refused. */
async function refusedPort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe);
  servers.splice(servers.indexOf(probe), 1);
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('@pool-controller/runtime, packed and installed alone into a fresh project', () => {
  let work: string;
  let project: string;
  let tarball: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'pool-controller-runtime-'));
    const report = JSON.parse(
      run(
        process.execPath,
        ['scripts/pack-runtime.mjs', '--out', join(work, 'package'), '--pack', work],
        root,
      ),
    ) as { pack: { filename: string } };
    tarball = join(work, report.pack.filename);
    project = join(work, 'consumer');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2)}\n`,
    );
    run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-package-lock', tarball],
      project,
    );
    copyImporting(
      join(root, 'test/package/installed-consumer.mjs'),
      join(project, 'consumer.mjs'),
      /'pool-controller'/,
    );
    copyImporting(
      join(root, 'dist/examples/polling-source.js'),
      join(project, 'polling-source.js'),
      /'\.\.\/src\/index\.js'/,
    );
  }, 2 * NPM_TIMEOUT_MS);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('installs as one package with no dependencies, under 2 MB', () => {
    const installed = run('npm', ['ls', '--all', '--parseable'], project)
      .trim()
      .split('\n')
      .slice(1);
    expect(installed.map((path) => path.slice(path.indexOf('node_modules')))).toEqual([
      'node_modules/@pool-controller/runtime',
    ]);
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules', NAME, 'package.json'), 'utf8'),
    ) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
    expect(Object.keys(manifest.exports as object)).toEqual(['.', './pods']);
    const bytes = bytesUnder(join(project, 'node_modules'));
    console.log(`@pool-controller/runtime installed: 1 package, ${bytes} bytes`);
    expect(bytes).toBeLessThan(MAX_INSTALLED_BYTES);
  });

  it('runs a ReconcileLoop over a resource of its own', () => {
    const result = spawnSync(process.execPath, ['consumer.mjs'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: '' });
    expect(result.stdout.trim().split('\n')).toEqual([
      'ci: compile-1=running compile-2=queued',
      'nightly: nightly-1=queued',
      'ci: compile-2=queued',
      'done',
    ]);
  });

  it('type-checks a strict TypeScript consumer against its declarations', () => {
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          lib: ['ES2023', 'ESNext.Disposable'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          exactOptionalPropertyTypes: true,
          noEmit: true,
          typeRoots: [join(root, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['typed.ts'],
      }),
    );
    writeFileSync(
      join(project, 'typed.ts'),
      [
        `import { InitialSyncTimeoutError, ReconcileLoop, type Source } from '${NAME}';`,
        'interface Row { id: string; group: string }',
        'const source: Source<Row> = async function* (signal: AbortSignal) {',
        "  yield { type: 'replace', objects: new Map([['r1', { id: 'r1', group: 'g' }]]) };",
        "  await new Promise((resolve) => signal.addEventListener('abort', resolve));",
        '};',
        'const loop = new ReconcileLoop<Row>({',
        '  source,',
        '  keyMap: (row) => row.group,',
        '  reconcile: async (group) => { loop.getByParent(group).map((row) => row.id); },',
        '  syncTimeoutMs: 1_000,',
        '});',
        'export const used: unknown = loop;',
        'export const isTimeout = (e: unknown): boolean => e instanceof InitialSyncTimeoutError;',
        '',
      ].join('\n'),
    );
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], project);
  });

  it('runs the docs’ polling example, which exits by itself once stopped', async () => {
    let jobs = [{ name: 'build-1', queue: 'ci', state: 'running' }];
    const port = await listen(
      createServer((_request, response) => {
        response.end(JSON.stringify(jobs));
      }),
    );
    const example = start(project, ['polling-source.js', `http://127.0.0.1:${port}/jobs`]);
    const wait = { withinMs: SLACK_MS };
    await until(() => example.stdout().includes('ci: build-1=running'), {
      ...wait,
      what: 'the first reconcile',
    });
    jobs = [{ name: 'build-1', queue: 'ci', state: 'done' }];
    await until(() => example.stdout().includes('ci: build-1=done'), {
      ...wait,
      what: 'the change',
    });
    example.child.kill('SIGTERM');
    const code = await finishes(example.exited, { ...wait, what: 'the example to exit' });
    expect({ code, stderr: example.stderr() }).toEqual({ code: 0, stderr: '' });
    expect(example.stdout().trim().split('\n').at(-1)).toBe('stopped');
  });

  it('runs the docs’ polling example against a refused port: one warning, then start() gives up within the bound', async () => {
    const port = await refusedPort();
    const startedAt = performance.now();
    const example = start(project, ['polling-source.js', `http://127.0.0.1:${port}/jobs`]);
    const code = await finishes(example.exited, {
      withinMs: SYNC_TIMEOUT_MS + SLACK_MS,
      what: 'the example to give up',
    });
    const elapsedMs = performance.now() - startedAt;
    expect(code).toBe(1);
    expect(elapsedMs).toBeGreaterThanOrEqual(SYNC_TIMEOUT_MS);
    expect(elapsedMs).toBeLessThan(SYNC_TIMEOUT_MS + SLACK_MS);
    const stderr = example.stderr();
    expect(stderr.match(/POOL_CONTROLLER_NO_LOGGER/g)).toHaveLength(1);
    expect(stderr).toMatch(
      /not started: ReconcileLoop: the initial sync did not finish within 5000 ms; .*ECONNREFUSED/,
    );
  });

  it(
    'offers the pod source once its optional peers are installed, and not before',
    async () => {
      const probe = (): ReturnType<typeof spawnSync> =>
        spawnSync(
          process.execPath,
          ['-e', `import('${NAME}/pods').then((m) => console.log(typeof m.WorkerPodSource))`],
          { cwd: project, encoding: 'utf8', timeout: 30_000 },
        );
      const without = probe();
      expect(without.status).not.toBe(0);
      expect(String(without.stderr)).toMatch(/Cannot find package '(zod|piscina)'/);

      const peers = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      run(
        'npm',
        [
          'install',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          '--no-package-lock',
          tarball,
          `piscina@${peers.dependencies.piscina}`,
          `zod@${peers.dependencies.zod}`,
        ],
        project,
      );
      const withPeers = probe();
      expect({ status: withPeers.status, stdout: String(withPeers.stdout).trim() }).toEqual({
        status: 0,
        stdout: 'function',
      });
      // And its declarations type-check, now that zod's are there (the previous test's tsconfig).
      writeFileSync(
        join(project, 'typed.ts'),
        [
          `import { type Pod, ReconcileLoop, WorkerPodSource } from '${NAME}/pods';`,
          "const pods = new WorkerPodSource({ namespace: 'default', closeGraceMs: 1_000 });",
          'export const loop = new ReconcileLoop<Pod>({',
          '  source: pods.source,',
          "  keyMap: (pod) => pod.metadata.labels['app'],",
          '  reconcile: async () => {},',
          '});',
          '',
        ].join('\n'),
      );
      run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], project);
    },
    NPM_TIMEOUT_MS,
  );
});
