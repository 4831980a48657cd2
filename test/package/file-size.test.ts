/**
 * Files stay small enough to read in one sitting: a source file over `MAX_LINES` says in its
 * header why it is one file (a ` * Size: …` paragraph), so a long file is a decision someone wrote
 * down, not an accident nobody noticed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** About a screenful of a few pages; the issue that set the rule said ~400. */
const MAX_LINES = 400;

function sourceFiles(dir: string): string[] {
  return (readdirSync(join(root, dir), { recursive: true }) as string[])
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `${dir}/${name.split('\\').join('/')}`);
}

/** The first doc comment of a file: its header. */
function header(text: string): string {
  const start = text.indexOf('/**');
  return start < 0 ? '' : text.slice(start, text.indexOf('*/', start));
}

describe('source file size', () => {
  it(`gives a reason in the header of every file over ${MAX_LINES} lines`, () => {
    const long = ['src', 'routes', 'workers']
      .flatMap(sourceFiles)
      .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }))
      .filter(({ text }) => text.split('\n').length > MAX_LINES);
    expect(long.length).toBeGreaterThan(0);
    expect(
      long.filter(({ text }) => !/\n \* Size: \S/.test(header(text))).map((f) => f.file),
    ).toEqual([]);
  });
});
