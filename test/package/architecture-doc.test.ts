/**
 * docs/architecture.md's "Every file" table is the project's map: it must list every source file
 * of src/, routes/ and workers/, and nothing that is not there. A file added, moved or removed
 * without its row fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  return (readdirSync(join(root, dir), { recursive: true }) as string[])
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `${dir}/${name.split('\\').join('/')}`);
}

function documentedFiles(): string[] {
  const text = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const table = text.slice(text.indexOf('### Every file'));
  return [...table.matchAll(/^\| `([^`]+\.ts)` +\|/gm)].map((m) => m[1]!);
}

describe('docs/architecture.md', () => {
  it('lists every source file, and only files that exist', () => {
    const tree = ['src', 'routes', 'workers'].flatMap(sourceFiles).sort();
    const documented = documentedFiles().sort();
    expect(documented.length).toBeGreaterThan(50);
    expect({ missingFromDoc: tree.filter((f) => !documented.includes(f)) }).toEqual({
      missingFromDoc: [],
    });
    expect({ notInTree: documented.filter((f) => !tree.includes(f)) }).toEqual({ notInTree: [] });
  });
});
