/**
 * One long-running binary of the environment (etcd or kube-apiserver): started with its output in
 * a log file, stopped gracefully then forcibly, and never left behind.
 *
 * Each process gets its own process group (detached) so a terminal's Ctrl-C does not race the
 * environment's own shutdown, and so `POOL_K8S_KEEP=1` can leave it running after the test process
 * exits. While it runs its pid sits in the environment's pid folder, which the reaper watches: if
 * the test process dies without calling stop(), the reaper kills whatever is listed there.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long SIGTERM gets before SIGKILL: kube-apiserver drains in a second or two when idle. */
export const gracefulStopTimeoutMs = 15_000;
/** Lines of a process's log printed when something fails: enough for a Go panic's first frames. */
export const logTailLines = 40;

export interface ManagedProcessSpec {
  /** Short name used in messages and for the log and pid files, e.g. `etcd` or `kube-apiserver`. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly pidDir: string;
}

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export class ManagedProcess {
  readonly spec: ManagedProcessSpec;
  #child: ChildProcess | undefined;
  #exit: Promise<ExitStatus> | undefined;
  #exitStatus: ExitStatus | undefined;

  constructor(spec: ManagedProcessSpec) {
    this.spec = spec;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Set once the process has exited; a process that dies while we wait for readiness is a failure. */
  get exitStatus(): ExitStatus | undefined {
    return this.#exitStatus;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#exitStatus === undefined;
  }

  start(): void {
    if (this.running) throw new Error(`e2e: ${this.spec.name} is already running`);
    const log = openSync(this.spec.logFile, 'a');
    writeFileSync(
      log,
      `\n=== ${new Date().toISOString()} starting ${this.spec.command} ${this.spec.args.join(' ')}\n`,
    );
    let child: ChildProcess;
    try {
      child = spawn(this.spec.command, [...this.spec.args], {
        detached: true,
        stdio: ['ignore', log, log],
      });
    } finally {
      closeSync(log);
    }
    this.#exitStatus = undefined;
    this.#exit = new Promise<ExitStatus>((resolve) => {
      child.once('exit', (code, signal) => {
        this.#exitStatus = { code, signal };
        rmSync(this.#pidFile(), { force: true });
        resolve(this.#exitStatus);
      });
      child.once('error', (error) => {
        this.#exitStatus = { code: null, signal: null };
        writeFileSync(this.spec.logFile, `e2e: could not start: ${error.message}\n`, { flag: 'a' });
        resolve(this.#exitStatus);
      });
    });
    // The test process must be free to exit while the binary runs (POOL_K8S_KEEP=1).
    child.unref();
    this.#child = child;
    if (child.pid !== undefined) writeFileSync(this.#pidFile(), String(child.pid));
  }

  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the process is gone. */
  async stop(timeoutMs = gracefulStopTimeoutMs): Promise<void> {
    const child = this.#child;
    const exit = this.#exit;
    if (!child || !exit || !this.running) return;
    this.#signal('SIGTERM');
    const exited = await Promise.race([exit.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!exited) {
      this.#signal('SIGKILL');
      await exit;
    }
  }

  /** The last lines of the log, for failure messages. */
  tail(lines = logTailLines): string {
    let text: string;
    try {
      text = readFileSync(this.spec.logFile, 'utf8');
    } catch {
      return `(no log at ${this.spec.logFile})`;
    }
    const all = text.trimEnd().split('\n');
    return all.slice(-lines).join('\n');
  }

  /**
   * The log's JSON lines, parsed; other lines (a stack trace, a line cut off by a kill) skipped.
   * The service logs JSON with `--log-format json`: tests and benches read its events from here.
   */
  jsonLines(): Array<Record<string, unknown>> {
    let text: string;
    try {
      text = readFileSync(this.spec.logFile, 'utf8');
    } catch {
      return [];
    }
    return text.split('\n').flatMap((line) => {
      if (!line.startsWith('{')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  /** A labelled log tail, ready to print. */
  describeFailure(): string {
    const status = this.#exitStatus
      ? `exited (code ${this.#exitStatus.code}, signal ${this.#exitStatus.signal})`
      : 'still running';
    return `--- ${this.spec.name} (${status}), last lines of ${this.spec.logFile}:\n${this.tail()}`;
  }

  #signal(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal); // the whole process group
    } catch {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  }

  #pidFile(): string {
    return join(this.spec.pidDir, `${this.spec.name}.pid`);
  }
}
