/**
 * connection.ts is the only importer of @kubernetes/client-node, and only lazily: everything else in
 * src/kubernetes (the reflector, the worker-backed source, the HTTP adapter) loads without it.
 * Checked on the compiled build in plain Node, with an import hook that denies the package.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function runDenied(code: string) {
  return spawnSync(
    process.execPath,
    ['--import', './test/support/deny-client-node.mjs', '--input-type=module', '-e', code],
    { cwd: root, encoding: 'utf8', timeout: 30_000 },
  );
}

describe('the client-node boundary', () => {
  it('loads every kubernetes module without @kubernetes/client-node', () => {
    // Every compiled module of the folder, so a new file is covered without editing this list.
    const modules = readdirSync(join(root, 'dist/src/kubernetes'), { recursive: true })
      .map(String)
      .filter((file) => file.endsWith('.js'));
    expect(modules.length).toBeGreaterThan(10);
    const imports = modules.map((m) => `await import('./dist/src/kubernetes/${m}');`).join('\n');
    const { status, stderr } = runDenied(imports);
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });

  it('reports a missing client as a configuration error when connecting', () => {
    const { status, stdout } = runDenied(
      `const { connectPodApi } = await import('./dist/src/kubernetes/http-pod-api.js');
       await connectPodApi().catch((e) => console.log(e.name + ': ' + e.message));`,
    );
    expect(status).toBe(0);
    expect(stdout).toContain('KubeConfigError: cannot load @kubernetes/client-node');
  });
});
