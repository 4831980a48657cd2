/**
 * A child process on the tests' own Node whose output is collected as text, for tests that run a
 * built example or an installed package and read what it printed and how it exited.
 */
import { type ChildProcess, spawn } from 'node:child_process';

/** A started child: the process, what it printed so far, and its exit code once it has closed. */
export interface RunningChild {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (null after a signal) once its output streams have closed. */
  exited: Promise<number | null>;
}

/**
 * Starts `node ...args` (`process.execPath`, so the lane's Node) in `cwd`, collecting its output.
 * Its stdin is closed unless `stdin` is `'pipe'` (then write to `child.stdin` and end it).
 */
export function startNodeChild(
  args: readonly string[],
  cwd?: string,
  stdin: 'ignore' | 'pipe' = 'ignore',
): RunningChild {
  const child = spawn(process.execPath, [...args], { cwd, stdio: [stdin, 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}
