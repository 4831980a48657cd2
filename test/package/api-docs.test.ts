/**
 * The generated API reference (`npm run docs:api`, a `.ci/run` step): TypeDoc covers exactly the
 * package's entries and fails on any warning, and scripts/api-docs-links.mjs fails on a broken
 * link in the pages it wrote. TypeDoc's own run is the CI step; here, what it is given and the
 * link check against pages made to break it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const json = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));

const works: string[] = [];
afterEach(() => {
  for (const work of works.splice(0)) rmSync(work, { recursive: true, force: true });
});

/** A generated folder of `pages` (path → HTML), checked by the link script. */
function checkLinks(pages: Record<string, string>): { status: number | null; stderr: string } {
  const work = mkdtempSync(join(tmpdir(), 'pool-controller-api-docs-'));
  works.push(work);
  for (const [path, html] of Object.entries(pages)) {
    mkdirSync(join(work, path, '..'), { recursive: true });
    writeFileSync(join(work, path), html);
  }
  const result = spawnSync(process.execPath, [join(root, 'scripts/api-docs-links.mjs'), work], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stderr: result.stderr };
}

describe('the API reference', () => {
  it("documents exactly the package's entries, the sources of its exports map", () => {
    const exportsMap = json('package.json').exports as Record<string, { default: string }>;
    const sources = Object.values(exportsMap).map((entry) =>
      entry.default.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'),
    );
    expect(json('typedoc.json').entryPoints).toEqual(sources);
  });

  it('fails on any warning, and is written where git and the package leave it out', () => {
    const config = json('typedoc.json');
    expect(config.treatWarningsAsErrors).toBe(true);
    expect(config.validation).toMatchObject({ invalidLink: true, notExported: true });
    expect(config.out).toBe('dist/api');
    const files: string[] = json('package.json').files;
    expect(files.some((f) => f === 'dist' || f.startsWith('dist/api'))).toBe(false);
    expect(readFileSync(join(root, '.gitignore'), 'utf8')).toMatch(/^dist\/$/m);
    expect(json('package.json').scripts['docs:api']).toBe(
      'node scripts/api-docs.mjs && node scripts/api-docs-links.mjs',
    );
  });

  it('passes pages whose relative links and fragments all resolve, whatever they link outside', () => {
    const result = checkLinks({
      'index.html': '<a href="classes/A.html#run">A.run</a> <a href="https://typedoc.org/">x</a>',
      'classes/A.html': '<h3 id="run">run</h3><a href="../index.html">up</a><a href="#run">#</a>',
    });
    expect(result).toEqual({ status: 0, stderr: expect.stringContaining('every relative link') });
  });

  it('fails on a link to a page that is not there, and on a fragment the page lacks', () => {
    const result = checkLinks({
      'index.html': '<a href="classes/Gone.html">gone</a> <a href="classes/A.html#stop">A.stop</a>',
      'classes/A.html': '<h3 id="run">run</h3>',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('broken link in index.html: classes/Gone.html (no such file)');
    expect(result.stderr).toContain('broken link in index.html: classes/A.html#stop (no id "stop"');
  });
});
