/**
 * The `pool-controller` command runs from the chunks `npm run build` bundles it into
 * (scripts/bundle-service.mjs), not from tsc's ~640 modules: Node's loader spent ~300 ms of the
 * main thread's CPU on those before `/readyz`. Checked on the build in plain Node, with a hook that
 * lists every file the process loads.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `dist/src/main.js` with `args`, and lists the project's files it loaded (from `dist/`). */
function loadedBy(args: readonly string[]): {
  status: number | null;
  stdout: string;
  files: string[];
} {
  const hook = `import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
process.on('exit', () => process.stderr.write(JSON.stringify(loaded)));`;
  const result = spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,${encodeURIComponent(hook)}`, 'dist/src/main.js', ...args],
    { cwd: root, encoding: 'utf8', timeout: 30_000 },
  );
  const files = (JSON.parse(result.stderr) as string[])
    .filter((url) => url.startsWith('file:') && url.includes('/dist/'))
    .map((url) => url.slice(url.indexOf('/dist/') + '/dist/'.length));
  return { status: result.status, stdout: result.stdout, files };
}

describe('the bundled command', () => {
  it('runs from its bundle: none of tsc’s command modules load', () => {
    const { status, stdout, files } = loadedBy(['--version']);
    expect(status).toBe(0);
    expect(stdout).toMatch(/^pool-controller /);
    expect(files).toContain('src/cli/service-bundle/service-command.js');
    // tsc's own modules of the command: in the bundle, never loaded beside it.
    expect(
      files.filter((file) => file.startsWith('src/cli/') && !file.includes('service-bundle/')),
    ).toEqual([]);
    expect(files).not.toContain('src/cli/config.js');
  });

  it('finds the files its modules locate by their own URL: the build facts beside dist/', () => {
    // build-info.ts finds dist/build-info.json from its own module's URL, which the bundle keeps;
    // a build that cannot find it prints "unknown".
    const { revision } = JSON.parse(readFileSync(join(root, 'dist/build-info.json'), 'utf8')) as {
      revision: string;
    };
    const { stdout } = loadedBy(['--version']);
    expect(revision).toMatch(/^[0-9a-f]{12}$/);
    expect(stdout).toContain(`(revision ${revision},`);
  });
});
