/**
 * The service's main thread never loads Node's bundled undici on its way to ready: an ES module
 * importing a value from `node:http` makes Node build that module's ES facade, whose lazy
 * `WebSocket` getter loads undici, 20–40 ms of CPU on the path to the first request
 * (src/kubernetes/client/node-http.ts). Checked on the compiled build in plain Node.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Scripts that run a command when imported: loaded by nothing else. */
const ENTRY_SCRIPTS = new Set([
  'src/main.js',
  'src/cli/kubectl-pools-main.js',
  'src/cli/openapi-cli.js',
]);

/** The status page's browser half: bundled into the page, never run by Node. */
function isBrowserCode(file: string): boolean {
  return file.startsWith('routes/status-page/browser/');
}

/** Node's own undici, as `process.moduleLoadList` names it once loaded. */
const NODE_UNDICI = 'NativeModule internal/deps/undici/undici';

function undiciLoadedAfterImporting(modules: readonly string[]): string {
  const { status, stdout, stderr } = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `for (const module of ${JSON.stringify(modules)}) await import(module);
       console.log(process.moduleLoadList.includes(${JSON.stringify(NODE_UNDICI)}));`,
    ],
    { cwd: root, encoding: 'utf8', timeout: 60_000 },
  );
  expect(stderr).toBe('');
  expect(status).toBe(0);
  return stdout.trim();
}

describe("Node's http module on the main thread", () => {
  it('loads every module of the service and its routes without loading undici', () => {
    // Every compiled module, so a new file that imports `node:http` is caught without editing this.
    const modules = ['src', 'routes'].flatMap((folder) =>
      readdirSync(join(root, 'dist', folder), { recursive: true })
        .map((file) => `${folder}/${String(file)}`)
        .filter((file) => file.endsWith('.js') && !ENTRY_SCRIPTS.has(file) && !isBrowserCode(file))
        .map((file) => `./dist/${file}`),
    );
    expect(modules.length).toBeGreaterThan(100);
    expect(undiciLoadedAfterImporting(modules)).toBe('false');
  });

  it('would load it through a plain import of node:http (the check can fail)', () => {
    expect(undiciLoadedAfterImporting(['node:http'])).toBe('true');
  });
});
