import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseBenchArgs } from '../../bench/bench-args.js';

const OPTIONS = {
  pods: { type: 'string', default: '10000' },
  json: { type: 'boolean', default: false },
} as const;
const USAGE = 'usage: bench [--pods N] [--json]';

class Exited extends Error {
  constructor(readonly code: number | undefined) {
    super(`exit ${code}`);
  }
}

function run(argv: string[]): {
  code?: number | undefined;
  stdout: string;
  stderr: string;
  values?: unknown;
} {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process, 'exit').mockImplementation((code) => {
    throw new Exited(code as number | undefined);
  });
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  try {
    const values = parseBenchArgs(OPTIONS, USAGE, argv);
    return { stdout, stderr, values };
  } catch (error) {
    if (error instanceof Exited) return { code: error.code, stdout, stderr };
    throw error;
  } finally {
    vi.restoreAllMocks();
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('bench scripts’ options', () => {
  it('parses the options with their defaults', () => {
    expect(run(['--json']).values).toEqual({ pods: '10000', json: true });
    expect(run(['--pods', '50000']).values).toEqual({ pods: '50000', json: false });
  });

  it('prints the usage and exits 0 on --help', () => {
    expect(run(['--help'])).toEqual({ code: 0, stdout: `${USAGE}\n`, stderr: '' });
  });

  it('names an unknown option in one line, then the usage, and exits 2 instead of a stack trace', () => {
    const result = run(['--podz', '3']);
    expect(result.code).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain("'--podz'");
    expect(lines[1]).toBe(USAGE);
    expect(result.stderr).not.toContain('    at ');
  });

  it('names an option missing its value', () => {
    const result = run(['--pods']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toContain('--pods');
  });
});
