/**
 * readBuildInfo finds the package's own package.json from wherever its module sits — src/service/
 * in the sources, dist/src/service/ in a build, the npm package and the image — and the revision
 * the build wrote beside it; a fact it cannot read is `unknown`, never a failed start.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readBuildInfo, UNKNOWN_BUILD_FACT, versionLine } from '../../src/service/build-info.js';

/** A package tree in a temporary folder: files relative to its root, with their contents. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'build-info-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

const moduleIn = (root: string, path: string): string => pathToFileURL(join(root, path)).href;
const OWN_PACKAGE = JSON.stringify({ name: 'pool-controller', version: '1.2.3' });

describe('readBuildInfo', () => {
  it('reads the version and the built revision from a build (dist/src/service/)', () => {
    const root = tree({
      'package.json': OWN_PACKAGE,
      'dist/build-info.json': JSON.stringify({ revision: '0123456789ab' }),
    });
    expect(readBuildInfo(moduleIn(root, 'dist/src/service/build-info.js'))).toEqual({
      version: '1.2.3',
      revision: '0123456789ab',
      nodeVersion: process.version,
    });
  });

  it('reads the version from the sources (src/service/), the revision unknown without a build', () => {
    const root = tree({ 'package.json': OWN_PACKAGE });
    expect(readBuildInfo(moduleIn(root, 'src/service/build-info.ts'))).toMatchObject({
      version: '1.2.3',
      revision: UNKNOWN_BUILD_FACT,
    });
  });

  it("skips a package.json that is not the package's own", () => {
    const root = tree({
      'package.json': OWN_PACKAGE,
      'dist/package.json': JSON.stringify({ name: 'something-else', version: '9.9.9' }),
    });
    expect(readBuildInfo(moduleIn(root, 'dist/src/service/build-info.js')).version).toBe('1.2.3');
  });

  it('reports unknown, not a failure, for missing or malformed files', () => {
    const root = tree({
      'package.json': '{ not json',
      'dist/build-info.json': JSON.stringify({ revision: 42 }),
    });
    expect(readBuildInfo(moduleIn(root, 'dist/src/service/build-info.js'))).toMatchObject({
      version: UNKNOWN_BUILD_FACT,
      revision: UNKNOWN_BUILD_FACT,
    });
  });
});

describe('versionLine', () => {
  it('names the package, its version, the revision and Node.js on one line', () => {
    expect(versionLine({ version: '1.2.3', revision: 'abc', nodeVersion: 'v24.0.0' })).toBe(
      'pool-controller 1.2.3 (revision abc, node v24.0.0)',
    );
  });
});
