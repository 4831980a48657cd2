/**
 * scripts/build-if-stale.mjs: `npm start` and `prepare` build only when dist/ is not the build of
 * the sources. Run in a scratch project whose `build` only counts its runs, so a rebuild is seen
 * without paying for one.
 */
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts as Record<
  string,
  string
>;

const works: string[] = [];
afterEach(() => {
  for (const work of works.splice(0)) rmSync(work, { recursive: true, force: true });
});

/** A project with the script, a source file and a `build` that writes dist/ and counts itself. */
function scratchProject(): string {
  const work = mkdtempSync(join(tmpdir(), 'pool-controller-stale-'));
  works.push(work);
  mkdirSync(join(work, 'scripts'));
  mkdirSync(join(work, 'src'));
  copyFileSync(join(root, 'scripts/build-if-stale.mjs'), join(work, 'scripts/build-if-stale.mjs'));
  writeFileSync(join(work, 'src/index.ts'), 'export const a = 1;\n');
  const build =
    "node -e \"require('fs').mkdirSync('dist',{recursive:true});require('fs').appendFileSync('builds','x')\"" +
    ' && node scripts/build-if-stale.mjs --stamp';
  writeFileSync(
    join(work, 'package.json'),
    `${JSON.stringify({ name: 'scratch', private: true, scripts: { build } }, null, 2)}\n`,
  );
  return work;
}

/** `npm start`'s first step; returns how many builds have run so far and what it said. */
function buildIfStale(work: string): { builds: number; stderr: string } {
  const env = { ...process.env };
  delete env.POOL_CONTROLLER_REVISION;
  const result = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], {
    cwd: work,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(result.status, result.stderr).toBe(0);
  const builds = existsSync(join(work, 'builds')) ? readFileSync(join(work, 'builds'), 'utf8') : '';
  return { builds: builds.length, stderr: result.stderr };
}

describe('build-if-stale', () => {
  it('builds the first time, then builds nothing while the sources are unchanged', () => {
    const work = scratchProject();
    expect(buildIfStale(work).builds).toBe(1);
    const second = buildIfStale(work);
    expect(second.builds).toBe(1);
    expect(second.stderr).toContain('dist/ is up to date');
  }, 120_000);

  it('builds again when a source, package.json or the stamp itself changed', () => {
    const work = scratchProject();
    buildIfStale(work);
    appendFileSync(join(work, 'src/index.ts'), 'export const b = 2;\n');
    expect(buildIfStale(work).builds).toBe(2);
    writeFileSync(join(work, 'src/new.ts'), 'export {};\n');
    expect(buildIfStale(work).builds).toBe(3);
    appendFileSync(join(work, 'package.json'), '\n');
    expect(buildIfStale(work).builds).toBe(4);
    writeFileSync(join(work, 'dist/build-stamp.json'), '{"inputs":"something else"}\n');
    expect(buildIfStale(work).builds).toBe(5);
    rmSync(join(work, 'dist'), { recursive: true });
    expect(buildIfStale(work).builds).toBe(6);
    expect(buildIfStale(work).builds).toBe(6);
  }, 180_000);

  it('counts every script the build runs among its inputs', () => {
    // A build script left out would let an edit to it go unbuilt by npm start.
    const ran = [...(scripts.build ?? '').matchAll(/node (scripts\/[\w-]+\.mjs)/g)].map(
      (m) => m[1],
    );
    expect(ran).toContain('scripts/bundle-service.mjs');
    const stale = readFileSync(join(root, 'scripts/build-if-stale.mjs'), 'utf8');
    expect(ran.filter((script) => !stale.includes(`'${script}'`))).toEqual([]);
  });

  it('is how npm start and prepare build, and what the build stamps last', () => {
    expect(scripts.start).toBe('node scripts/build-if-stale.mjs && node dist/src/main.js');
    expect(scripts.prepare).toBe('node scripts/build-if-stale.mjs');
    expect(scripts.build).toMatch(/ && node scripts\/build-if-stale\.mjs --stamp$/);
  });
});
