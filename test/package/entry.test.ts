/**
 * The shipped build, checked in plain Node: `npm test` builds first, so these load `dist/` the way
 * a consumer (or the container's `node dist/src/main.js`) does, outside the test runner's
 * TypeScript transform.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

function runNode(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, args, {
    cwd: root,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const RUNTIME_EXPORTS = [
  'realClock',
  'ObjectStore',
  'WorkQueue',
  'RetryScheduler',
  'SourceStreamDriver',
  'ReconcileLoop',
];

describe('the package entry in plain Node', () => {
  it('has been built to dist/src/index.js', () => {
    expect(existsSync(`${root}dist/src/index.js`)).toBe(true);
  });

  it('exports the runtime API under the names RUNTIME.md gives', () => {
    const script = `import('./dist/src/index.js').then((m) => console.log(JSON.stringify(Object.keys(m))))`;
    const { status, stdout, stderr } = runNode(['-e', script]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const names: string[] = JSON.parse(stdout);
    for (const name of RUNTIME_EXPORTS) expect(names).toContain(name);
  });

  it('exposes the runtime alone as ./runtime and with the pod source as ./pods, under the root’s names', () => {
    const script = `Promise.all(['./dist/src/index.js', './dist/src/runtime/index.js', './dist/src/kubernetes/pods.js'].map((p) => import(p))).then((ms) => console.log(JSON.stringify(ms.map((m) => Object.keys(m)))))`;
    const { status, stdout, stderr } = runNode(['-e', script]);
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    const [root, runtime, pods] = JSON.parse(stdout) as [string[], string[], string[]];
    for (const name of RUNTIME_EXPORTS) expect(runtime).toContain(name);
    expect(runtime.filter((name) => !root.includes(name))).toEqual([]);
    expect(pods.filter((name) => !root.includes(name))).toEqual([]);
    expect(runtime.filter((name) => !pods.includes(name))).toEqual([]);
    expect(pods).toContain('WorkerPodSource');
    expect(runtime).not.toContain('WorkerPodSource');
  });

  it('loads without @kubernetes/client-node being imported', () => {
    const deny = ['--import', './test/support/deny-client-node.mjs'];
    const { status, stderr } = runNode([...deny, '-e', "import('./dist/src/index.js')"]);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    // The hook itself works: importing client-node directly fails under it.
    const direct = runNode([...deny, '-e', "import('@kubernetes/client-node')"]);
    expect(direct.status).not.toBe(0);
    expect(direct.stderr).toContain('denied');
  });

  it('runs the README example of a ReconcileLoop over a hand-written source', () => {
    const { status, stdout, stderr } = runNode(['dist/examples/hand-written-source.js']);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(stdout.trim().split('\n')).toEqual(['a: [a-0, a-1]', 'b: [b-0]', 'a: [a-0]']);
  });
});
