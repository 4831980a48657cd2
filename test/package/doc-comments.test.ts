/**
 * The house rule "a doc comment on every exported symbol" (issue 17), enforced: every top-level
 * exported declaration of src/, routes/ and workers/ has a `/** … *\/` comment directly before it.
 * Whether the comment says why rather than what is for review; that one is there is for this test.
 * The parser (test/support/exported-declarations.ts) is first run over files held in memory, so
 * the test shows it can tell a documented declaration from an undocumented one before it is
 * trusted with the tree.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createVirtualFileSystem } from 'typescript/unstable/fs';
import { describe, expect, it } from 'vitest';
import { exportedDeclarations } from '../support/exported-declarations.js';

const root = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const COVERED = /^(src|routes|workers)\/.+(?<!\.d)\.ts$/;

/** One file naming each form the parser must see, documented and not. */
const FIXTURE = `/** The file header: documents nothing below it. */
import { x } from './other.js';

export function bare(): void {}

/** Documented. */
export function documented(): void {}

/** The first overload carries the comment. */
export function overloaded(a: string): string;
export function overloaded(a: number): number;
export function overloaded(a: string | number): string | number {
  return a;
}

/* A plain block comment is not a doc comment. */
export class Plain {}

/** A doc comment followed by a line comment is no longer directly before it. */
// note
export interface Separated {}

/**   */
export type Empty = string;

/** Documented. */
export const one = 1,
  two = 2;

export let counter = 0;

export enum Colour {
  Red,
}

export default x;

function internal(): void {}
export { internal };
`;

describe('the doc-comment check', () => {
  it('tells documented exported declarations from undocumented ones', () => {
    const fs = createVirtualFileSystem({
      '/fixture/tsconfig.json': JSON.stringify({
        compilerOptions: { noLib: true, types: [], module: 'preserve' },
        files: ['exports.ts', 'other.ts'],
      }),
      '/fixture/exports.ts': FIXTURE,
      '/fixture/other.ts': 'export const x = 1;\n',
    });
    const { declarations } = exportedDeclarations(
      { cwd: '/fixture', config: 'tsconfig.json', fs },
      (file) => file === 'exports.ts',
    );
    expect(
      declarations.map(({ kind, name, line, documented }) => [kind, name, line, documented]),
    ).toEqual([
      ['function', 'bare', 4, false],
      ['function', 'documented', 7, true],
      ['function', 'overloaded', 10, true],
      ['class', 'Plain', 17, false],
      ['interface', 'Separated', 21, false],
      ['type', 'Empty', 24, false],
      ['const', 'one, two', 27, true],
      ['let', 'counter', 30, false],
      ['enum', 'Colour', 32, false],
      ['default', 'default', 36, false],
    ]);
  });
});

describe('exported declarations of src/, routes/ and workers/', () => {
  const { files, declarations } = exportedDeclarations(
    { cwd: root, config: 'tsconfig.build.json' },
    (file) => COVERED.test(file),
  );

  it('are all read: every source file of those folders is in the compiled program', () => {
    const onDisk = ['src', 'routes', 'workers']
      .flatMap((dir) =>
        (readdirSync(`${root}/${dir}`, { recursive: true }) as string[]).map((f) => `${dir}/${f}`),
      )
      .filter((file) => COVERED.test(file))
      .sort();
    expect(files).toEqual(onDisk);
    expect(declarations.length).toBeGreaterThan(0);
  });

  it('each have a doc comment directly before them', () => {
    const undocumented = declarations
      .filter((d) => !d.documented)
      .map((d) => `${d.file}:${d.line} ${d.kind} ${d.name}`);
    expect(undocumented, `${undocumented.length} of ${declarations.length} undocumented`).toEqual(
      [],
    );
  });
});
