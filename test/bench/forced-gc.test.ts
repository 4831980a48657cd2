import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The built module (`npm test` builds first): the benches run it from dist/. */
const FORCED_GC = fileURLToPath(new URL('../../dist/bench/forced-gc.js', import.meta.url));

/**
 * Runs a child that takes the collector, collects, then loads an internal module Node had not
 * loaded yet; returns the internal modules whose built-in code cache V8 rejected, and what the
 * child printed.
 */
function runChild(nodeFlags: string[]): { rejected: string[]; stdout: string } {
  const script = [
    `const { forcedGc } = await import(${JSON.stringify(FORCED_GC)});`,
    'const gc = forcedGc();',
    'let garbage = Array.from({ length: 200_000 }, (_, i) => ({ i }));',
    'const before = process.memoryUsage().heapUsed;',
    'garbage = undefined;',
    'gc();',
    'await import("node:http2");',
    'console.log(JSON.stringify({ freed: before - process.memoryUsage().heapUsed }));',
  ].join('\n');
  const result = spawnSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', script], {
    env: { ...process.env, NODE_DEBUG_NATIVE: 'CODE_CACHE', NODE_OPTIONS: '' },
    encoding: 'utf8',
  });
  expect(result.status, result.stderr).toBe(0);
  const rejected = result.stderr
    .split('\n')
    .filter((line) => line.includes('is rejected'))
    .map((line) => line.trim());
  return { rejected, stdout: result.stdout };
}

describe('forcedGc (the benches’ full collections)', () => {
  it('collects the heap without leaving --expose-gc on, so Node keeps its built-in code cache', () => {
    const { rejected, stdout } = runChild([]);
    expect(rejected).toEqual([]);
    // 200,000 small objects are several MB; a full collection frees most of them.
    expect(JSON.parse(stdout).freed).toBeGreaterThan(2 * 1024 * 1024);
  });

  it('is what the flag on the command line would cost: Node rejects its cache under it', () => {
    // The control: the same child under `--expose-gc` compiles node:http2 and its parts from
    // source, which is what the benches paid before (a worker thread started ~25 ms later).
    expect(runChild(['--expose-gc']).rejected.length).toBeGreaterThan(0);
  });
});
