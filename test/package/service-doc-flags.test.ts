/**
 * docs/service.md's flag table is what operators read; src/cli/flag-table.ts is what the service
 * parses and `--help` prints. The table's first three columns (the flag as `--help` spells it, its
 * variable, its default) must say what the code says, row for row, and list exactly the code's
 * flags; only the Meaning column is the doc's own prose.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { envName, FLAGS, type FlagSpec } from '../../src/cli/flag-table.js';

const servicePath = fileURLToPath(new URL('../../docs/service.md', import.meta.url));
const HEADER = /^\| Flag +\| Variable +\| Default +\| Meaning +\|$/;

interface DocumentedFlag {
  usage: string;
  variable: string;
  defaultText: string;
}

/** A cell as read: backticks are markdown's, `\|` is a pipe inside a cell. */
function plain(cell: string): string {
  return cell.trim().replaceAll('`', '').replaceAll('\\|', '|');
}

function documentedFlags(): DocumentedFlag[] {
  const lines = readFileSync(servicePath, 'utf8').split('\n');
  const header = lines.findIndex((line) => HEADER.test(line));
  expect(header, 'the "| Flag | Variable | Default | Meaning |" table').toBeGreaterThan(0);
  const rows: DocumentedFlag[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [usage, variable, defaultText] = line
      .slice(1)
      .split(/(?<!\\)\|/)
      .map(plain);
    rows.push({ usage: usage!, variable: variable!, defaultText: defaultText! });
  }
  return rows;
}

/** The row the code's table implies for one flag. */
function expectedRow(spec: FlagSpec): DocumentedFlag {
  return {
    usage: `--${spec.flag}${spec.kind === 'boolean' ? '' : ' '}${spec.valueName}`,
    variable: `${envName(spec.flag)}${spec.kind === 'multiple' ? ' (comma-separated)' : ''}`,
    defaultText: spec.defaultText ?? 'none',
  };
}

const flagOf = (usage: string) => usage.split(/[ [=]/, 1)[0]!;

describe("docs/service.md's flag table", () => {
  it('lists every flag of the code, and none the code does not have', () => {
    const documented = documentedFlags().map((row) => flagOf(row.usage));
    const code = FLAGS.map((spec) => `--${spec.flag}`);
    expect({ missingFromDoc: code.filter((flag) => !documented.includes(flag)) }).toEqual({
      missingFromDoc: [],
    });
    expect({ notInCode: documented.filter((flag) => !code.includes(flag)) }).toEqual({
      notInCode: [],
    });
    expect(new Set(documented).size).toBe(documented.length);
  });

  it("spells each flag, its variable and its default as the code's table does", () => {
    const byFlag = new Map(documentedFlags().map((row) => [flagOf(row.usage), row]));
    for (const spec of FLAGS) {
      const row = byFlag.get(`--${spec.flag}`);
      if (row) expect(row, spec.flag).toEqual(expectedRow(spec));
    }
  });
});
