/**
 * The repository's documentation stands alone: every link in README.md, docs/ and the chart's
 * notes leads to a file of the repository (or a heading of the same page), none to another site
 * or to a directory beside the repository, so a clone, a tarball or an air-gapped mirror reads
 * the same.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'charts/pool-controller/templates/NOTES.txt',
];

/** Every markdown link target of `text`: `[text](target)`, without a `"title"`. */
function linkTargets(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

describe('the documentation', () => {
  it('links only to files of the repository', () => {
    const outside: string[] = [];
    for (const document of DOCUMENTS) {
      const text = readFileSync(join(root, document), 'utf8');
      for (const target of linkTargets(text)) {
        if (target.startsWith('#')) continue;
        const path = target.split('#')[0]!;
        const absolute = resolve(root, dirname(document), path);
        const inside = !relative(root, absolute).startsWith('..');
        if (/^[a-z]+:/i.test(target) || !inside || !existsSync(absolute)) {
          outside.push(`${document}: ${target}`);
        }
      }
    }
    expect(outside).toEqual([]);
  });

  it('names no directory beside the repository', () => {
    for (const document of DOCUMENTS) {
      const text = readFileSync(join(root, document), 'utf8');
      expect(text, document).not.toMatch(/\.\.\/shared\b|\/work\/shared/);
    }
  });
});
