/**
 * What CI reads of `.ci/run`'s output. CI takes a pytest-style closing line ("=== … in 12.3s ===")
 * as the verdict of a test runner; schemathesis (the `fuzz:api` step) prints one with no "passed"
 * count, and a landed run was once judged to have executed no test because of it. The fuzzer's
 * output goes through scripts/schemathesis-output.sed; these pin what that leaves.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** A pytest closing line: a rule of "=" around "<counts> in <seconds>s". */
const PYTEST_CLOSING_LINE = /^=+ .* in [0-9.]+s( \([^)]*\))? =+$/;

/** The tail schemathesis 4.32.5 printed in CI, verbatim. */
const SCHEMATHESIS_TAIL = [
  '=================================== WARNINGS ===================================',
  '',
  'Missing test data: 2 operations repeatedly returned 404 Not Found',
  '=================================== SUMMARY ====================================',
  'Test cases:',
  '  785 generated, 785 passed, 4 skipped',
  '',
  'Seed: 1',
  '',
  '============================= 1 warning in 76.15s ==============================',
  '======================== 2 failed, 1 warning in 12.30s =========================',
].join('\n');

function throughFilter(text: string): string[] {
  const result = spawnSync('sed', ['-u', '-E', '-f', 'scripts/schemathesis-output.sed'], {
    cwd: root,
    input: text,
    encoding: 'utf8',
    timeout: 10_000,
  });
  expect(result.status).toBe(0);
  return result.stdout.split('\n');
}

describe('the fuzz step output CI reads', () => {
  it('leaves no pytest-style closing line in the fuzzer output', () => {
    expect(SCHEMATHESIS_TAIL.split('\n').filter((l) => PYTEST_CLOSING_LINE.test(l))).toHaveLength(
      2,
    );
    const lines = throughFilter(SCHEMATHESIS_TAIL);
    expect(lines.filter((l) => PYTEST_CLOSING_LINE.test(l))).toEqual([]);
  });

  it('keeps the words of the summary', () => {
    const lines = throughFilter(SCHEMATHESIS_TAIL);
    expect(lines).toContain('fuzz:api -- 1 warning in 76.15s --');
    expect(lines).toContain('fuzz:api -- 2 failed, 1 warning in 12.30s --');
    expect(lines).toContain('  785 generated, 785 passed, 4 skipped');
  });

  it('pipes every schemathesis run through the filter', () => {
    const script = readFileSync(`${root}scripts/fuzz-api.sh`, 'utf8');
    expect(script).toMatch(/set -euo pipefail/);
    expect(script).toMatch(
      /"\$venv\/bin\/st" --no-color run[\s\S]*?\| sed -u -E -f "\$repo\/scripts\/schemathesis-output\.sed"/,
    );
  });

  it('builds the service image before the e2e step and names it for the image smoke test', () => {
    const run = readFileSync(`${root}.ci/run`, 'utf8');
    const exported = run.indexOf('export POOL_CONTROLLER_IMAGE=');
    const built = run.search(/step \d+ bash scripts\/image\.sh build/);
    const e2e = run.search(/step \d+ npx vitest run --config vitest\.e2e\.config\.ts/);
    expect(exported).toBeGreaterThan(-1);
    expect(built).toBeGreaterThan(exported);
    expect(e2e).toBeGreaterThan(built);
  });

  it('bounds every step in time and counts failed steps in the closing line', () => {
    const run = readFileSync(`${root}.ci/run`, 'utf8');
    const steps = run.split('\n').filter((line) => /^step /.test(line));
    expect(steps.length).toBeGreaterThan(8);
    for (const line of steps) expect(line).toMatch(/^step \d+ /);
    expect(run).toMatch(/timeout --kill-after=30s "\$\{minutes\}m"/);
    expect(run).toMatch(/failed \+= failedSteps;/);
  });

  it('ends .ci/run with the plain closing line CI counts', () => {
    const run = readFileSync(`${root}.ci/run`, 'utf8');
    expect(run).toMatch(/console\.log\(`tests: \$\{passed\} passed, \$\{failed\} failed/);
  });

  it("is what the README's CI table lists: every step, in order, with its time bound", () => {
    const run = readFileSync(`${root}.ci/run`, 'utf8');
    // `step 15 npm test -- --reporter=…` → ['npm test', 15]: the command without report flags.
    const steps = run
      .split('\n')
      .map((line) => /^step (\d+) (.*?)(?: --(?: |reporter).*| \\)?$/.exec(line))
      .filter((m) => m !== null)
      .map((m) => [m[2]!, Number(m[1])]);
    const readme = readFileSync(`${root}README.md`, 'utf8');
    const table = readme.slice(readme.indexOf('`bash .ci/run` is what CI runs'));
    const rows = [...table.matchAll(/^\| `([^`]+)` +\| (\d+) min +\|/gm)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]);
    expect(steps.length).toBeGreaterThan(8);
    expect(rows).toEqual(steps);
  });
});
