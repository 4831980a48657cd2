/**
 * The machine's noise floor for a main-thread stall: an idle Node process running a 1 ms ticker
 * beside the measurements. The gaps it sees are the OS not scheduling it (the API server, the
 * measured process's other thread, other agents on a shared machine), which no code in a measured
 * variant can avoid either; the stall target is "≤ 15 ms or this floor" (bench:sync once
 * beside all its runs, bench:peers beside each run of ours).
 */
import { spawn } from 'node:child_process';

/** What the idle process saw: how many gaps over 10 ms, the five longest (longest first). */
export interface IdleControlResult {
  gaps: number;
  longestMs: number[];
}

/**
 * Starts the idle process and resolves once its ticker runs, so that its own start (a Node
 * process's bootstrap) is not on the cores while the measured variant starts; `stop()` ends it and
 * reads what it saw.
 */
export async function startIdleControl(): Promise<{ stop: () => Promise<IdleControlResult> }> {
  const code = `let last = performance.now(); const gaps = [];
setInterval(() => { const now = performance.now(); if (now - last > 10) gaps.push(now - last); last = now; }, 1);
setTimeout(() => process.stdout.write('ticking\\n'), 1);
process.stdin.on('data', () => {}).on('end', () => { gaps.sort((a, b) => b - a);
process.stdout.write(JSON.stringify({ gaps: gaps.length, longestMs: gaps.slice(0, 5) })); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let markTicking: () => void = () => {};
  const ticking = new Promise<void>((resolve) => {
    markTicking = resolve;
  });
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    out += text;
    if (out.includes('ticking\n')) markTicking();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await Promise.race([ticking, exited]);
  let stopped: Promise<IdleControlResult> | undefined;
  return {
    // Once: a second call gets the first one's result.
    stop: () => {
      stopped ??= (async () => {
        child.stdin.end();
        await exited;
        const result = out.slice(out.indexOf('ticking\n') + 'ticking\n'.length);
        return JSON.parse(result || '{"gaps":0,"longestMs":[]}') as IdleControlResult;
      })();
      return stopped;
    },
  };
}
