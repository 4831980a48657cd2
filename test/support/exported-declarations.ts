/**
 * Every top-level exported declaration of a TypeScript project, and whether a doc comment stands
 * directly before it: the parser behind test/package/doc-comments.test.ts.
 *
 * It reads syntax trees from the TypeScript compiler itself (the native compiler's API, which runs
 * the bundled `tsgo` as a child process for as long as one call lasts), not from regular
 * expressions over text, so a declaration spread over lines, a `declare`d one or an overload is
 * seen the way the compiler sees it. Counted: exported functions, classes, interfaces, type
 * aliases, variable statements (one entry per statement, named after all its variables), enums,
 * namespaces and `export default …`. Not counted: `export { … } from …` lists, whose documentation
 * belongs to the declaration they forward, and class members. An overloaded function is one
 * entry, documented when its first signature is.
 */
import {
  getLeadingCommentRanges,
  isExportAssignment,
  isIdentifier,
  isStringLiteral,
  isVariableStatement,
  type ModifiersBase,
  type Node,
  NodeFlags,
  type SourceFile,
  type Statement,
  SyntaxKind,
} from 'typescript/unstable/ast';
import type { FileSystem } from 'typescript/unstable/fs';
import { API } from 'typescript/unstable/sync';

/** One top-level exported declaration, located for a failure message a reader can act on. */
export interface ExportedDeclaration {
  /** Path relative to the project's working directory, with `/` separators. */
  file: string;
  /** 1-based line of the declaration's first token (after its comments). */
  line: number;
  /** `function`, `class`, `interface`, `type`, `const`/`let`/`var`, `enum`, `namespace`, `default`. */
  kind: string;
  /** The declared name; a variable statement lists its variables joined with `, `. */
  name: string;
  /** A non-empty `/** … *\/` comment is the last comment before the declaration. */
  documented: boolean;
}

/** Where to find the project; `fs` lets a test hand the compiler files that exist only in memory. */
export interface ProjectLocation {
  /** Directory the paths are relative to; the compiler's working directory. */
  cwd: string;
  /** The tsconfig file whose program is read, relative to `cwd`. */
  config: string;
  /** A virtual file system; the compiler falls back to the disk where it returns `undefined`. */
  fs?: FileSystem;
}

/**
 * The exported declarations of every source file of the project's program that `include` accepts
 * (given the path relative to `cwd`), in file order. Also returns the files the program holds, so
 * a caller can check that no file it means to cover is missing from the program.
 */
export function exportedDeclarations(
  location: ProjectLocation,
  include: (file: string) => boolean,
): { files: string[]; declarations: ExportedDeclaration[] } {
  const api = new API({ cwd: location.cwd, ...(location.fs ? { fs: location.fs } : {}) });
  try {
    const snapshot = api.updateSnapshot({ openProjects: [location.config] });
    const project = snapshot.getProjects()[0];
    if (!project) throw new Error(`the compiler opened no project for ${location.config}`);
    const prefix = `${location.cwd.replace(/\/+$/, '')}/`;
    const files = project.program
      .getSourceFileNames()
      .map((name) => (name.startsWith(prefix) ? name.slice(prefix.length) : name))
      .filter(include)
      .sort();
    const declarations: ExportedDeclaration[] = [];
    for (const file of files) {
      const source = project.program.getSourceFile(prefix + file);
      if (!source) throw new Error(`the compiler has no syntax tree for ${file}`);
      declarations.push(...declarationsOf(file, source));
    }
    return { files, declarations };
  } finally {
    api.close();
  }
}

function declarationsOf(file: string, source: SourceFile): ExportedDeclaration[] {
  const text = source.text;
  const found: ExportedDeclaration[] = [];
  let previousFunction: string | undefined;
  for (const statement of source.statements) {
    const described = describe(statement);
    const overload = described?.kind === 'function' && described.name === previousFunction;
    previousFunction = described?.kind === 'function' ? described.name : undefined;
    if (!described || overload) continue;
    const start = startOf(text, statement.pos);
    found.push({
      file,
      line: lineOf(text, start),
      ...described,
      documented: hasDocComment(text, statement.pos),
    });
  }
  return found;
}

const DECLARATION_KINDS = new Map<SyntaxKind, string>([
  [SyntaxKind.FunctionDeclaration, 'function'],
  [SyntaxKind.ClassDeclaration, 'class'],
  [SyntaxKind.InterfaceDeclaration, 'interface'],
  [SyntaxKind.TypeAliasDeclaration, 'type'],
  [SyntaxKind.EnumDeclaration, 'enum'],
  [SyntaxKind.ModuleDeclaration, 'namespace'],
]);

function describe(node: Statement): { kind: string; name: string } | undefined {
  if (isExportAssignment(node)) return { kind: 'default', name: 'default' };
  const modifiers = (node as Statement & Partial<ModifiersBase>).modifiers ?? [];
  if (!modifiers.some((m) => m.kind === SyntaxKind.ExportKeyword)) return undefined;
  if (isVariableStatement(node)) {
    const list = node.declarationList;
    const names = list.declarations.map((d) => (isIdentifier(d.name) ? d.name.text : '<pattern>'));
    return { kind: variableKeyword(list.flags), name: names.join(', ') };
  }
  const kind = DECLARATION_KINDS.get(node.kind);
  if (!kind) return undefined;
  const name = (node as Statement & { name?: Node }).name;
  if (name && (isIdentifier(name) || isStringLiteral(name))) return { kind, name: name.text };
  return { kind, name: 'default' };
}

function variableKeyword(flags: NodeFlags): string {
  if (flags & NodeFlags.Const) return 'const';
  if (flags & NodeFlags.Let) return 'let';
  return 'var';
}

function hasDocComment(text: string, pos: number): boolean {
  const last = (getLeadingCommentRanges(text, pos) ?? []).at(-1);
  if (!last) return false;
  const comment = text.slice(last.pos, last.end);
  if (!comment.startsWith('/**') || comment === '/**/') return false;
  return comment.slice(3, -2).replace(/[\s*]/g, '').length > 0;
}

/** The first character of the statement itself, past the whitespace and comments before it. */
function startOf(text: string, pos: number): number {
  const last = (getLeadingCommentRanges(text, pos) ?? []).at(-1);
  let at = last ? last.end : pos;
  while (at < text.length && /\s/.test(text[at]!)) at++;
  return at;
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
