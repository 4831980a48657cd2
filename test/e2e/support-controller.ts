/**
 * What the e2e files that run fleets of the BUILT service (`dist/src/main.js`) share, on top of
 * support-service.ts (LWS pods, the shipped Roles, waiting): controller
 * processes that are always killed (own process group, pid watched by the reaper), a reader of the
 * service's event stream, a recording reverse proxy (which replica sent what, and when) and a
 * polling wait with a deadline.
 *
 * Waits poll real time; assertions rest on "this became true before the deadline", never on a
 * fixed sleep.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { recipeDir } from './environment/binaries.js';
import { freeLoopbackPort } from './environment/free-port.js';
import { type ExitStatus, ManagedProcess } from './environment/managed-process.js';
import { MAIN, parseEventBlock, waitFor } from './support-service.js';

// The service-level helpers live in support-service.ts; the files that drive a fleet import them
// from here too, so each test imports one module.
export {
  bindShippedRoles,
  kubernetesSourceArgs,
  LEADER_ELECTION_ROLE,
  LWS,
  lwsPod,
  MAIN,
  ROLE,
  waitFor,
} from './support-service.js';

/** Throws a clear message when the service has not been built (`npm run build`). */
export function requireBuiltService(): void {
  if (!existsSync(MAIN)) {
    throw new Error(`e2e: ${MAIN} is missing; run \`npm run build\` (npm run test:e2e does)`);
  }
}

export interface ControllerOptions {
  /** Unique among running controllers: names its log and pid files and is its `POD_NAME`. */
  name: string;
  /** Every flag but --listen (the fleet picks a free loopback port). */
  args: readonly string[];
}

export interface RunningController {
  readonly name: string;
  /** `http://127.0.0.1:<port>` of its control plane. */
  readonly url: string;
  readonly running: boolean;
  readonly exitStatus: ExitStatus | undefined;
  /** Its process (the `env` that execs node, so node itself), while it runs. */
  readonly pid: number | undefined;
  /** GET `path` on the control plane as JSON (throws on a non-200). */
  get<T>(path: string): Promise<T>;
  /** GET `path` on the control plane as text, e.g. /metrics (throws on a non-200). */
  getText(path: string): Promise<string>;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with how it exited. */
  terminate(timeoutMs?: number): Promise<ExitStatus>;
  /** SIGKILL (a crash: no Lease release, nothing orderly). */
  kill(): Promise<ExitStatus>;
  /** Its JSON log lines, parsed (unparseable lines skipped). */
  logLines(): Array<Record<string, unknown>>;
  logTail(lines?: number): string;
}

/**
 * Controller processes of one test file: each in its own process group with its pid in a folder
 * the reaper watches, so a crashed test run leaves none behind; `dispose()` kills the rest.
 */
export class ControllerFleet {
  readonly stateDir: string;
  readonly #pidDir: string;
  readonly #reaper: ChildProcess;
  readonly #processes: ManagedProcess[] = [];

  private constructor() {
    this.stateDir = mkdtempSync(join(tmpdir(), 'pool-controller-e2e-'));
    this.#pidDir = join(this.stateDir, 'pids');
    mkdirSync(this.#pidDir);
    this.#reaper = spawn(
      process.execPath,
      [join(recipeDir, 'reaper.mjs'), String(process.pid), this.#pidDir, this.stateDir],
      { detached: true, stdio: 'ignore' },
    );
    this.#reaper.unref();
  }

  static create(): ControllerFleet {
    requireBuiltService();
    return new ControllerFleet();
  }

  /** Starts `node dist/src/main.js` and resolves once /healthz answers. */
  async start(options: ControllerOptions): Promise<RunningController> {
    const port = await freeLoopbackPort();
    const url = `http://127.0.0.1:${port}`;
    const logFile = join(this.stateDir, `${options.name}.log`);
    const managed = new ManagedProcess({
      name: options.name,
      command: 'env',
      args: [
        '-i',
        `PATH=${process.env.PATH ?? ''}`,
        `POD_NAME=${options.name}`,
        process.execPath,
        MAIN,
        ...options.args,
        '--listen',
        `127.0.0.1:${port}`,
        '--log-format',
        'json',
      ],
      logFile,
      pidDir: this.#pidDir,
    });
    this.#processes.push(managed);
    managed.start();
    const waitExit = async (): Promise<ExitStatus> => {
      while (managed.exitStatus === undefined) await sleep(20);
      return managed.exitStatus;
    };
    const controller: RunningController = {
      name: options.name,
      url,
      get running() {
        return managed.running;
      },
      get exitStatus() {
        return managed.exitStatus;
      },
      get pid() {
        return managed.pid;
      },
      async get<T>(path: string): Promise<T> {
        return JSON.parse(await controller.getText(path)) as T;
      },
      async getText(path: string): Promise<string> {
        const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(5_000) });
        const text = await response.text();
        if (response.status !== 200)
          throw new Error(`GET ${path}: HTTP ${response.status} ${text}`);
        return text;
      },
      async terminate(timeoutMs = 15_000) {
        await managed.stop(timeoutMs);
        return waitExit();
      },
      async kill() {
        const pid = managed.pid;
        if (pid !== undefined && managed.running) {
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
        return waitExit();
      },
      logLines: () => managed.jsonLines(),
      logTail: (lines?: number) => managed.tail(lines),
    };
    try {
      await waitFor(
        `controller ${options.name} to answer /healthz`,
        async () => {
          if (managed.exitStatus) {
            throw new Error(`exited ${JSON.stringify(managed.exitStatus)}`);
          }
          const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
          return response.status === 200 ? true : undefined;
        },
        60_000,
      );
    } catch (error) {
      const tail = managed.describeFailure();
      await controller.kill();
      throw new Error(`${error}\n${tail}`);
    }
    return controller;
  }

  /** Kills every controller still running (SIGKILL), then the reaper; removes the state folder. */
  async dispose(): Promise<void> {
    for (const managed of this.#processes) {
      const pid = managed.pid;
      if (pid === undefined || !managed.running) continue;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
      const deadline = Date.now() + 5_000;
      while (managed.running && Date.now() < deadline) await sleep(20);
    }
    try {
      if (this.#reaper.pid !== undefined) process.kill(this.#reaper.pid, 'SIGKILL');
    } catch {
      // gone
    }
    if (process.env.POOL_K8S_KEEP !== '1') rmSync(this.stateDir, { recursive: true, force: true });
  }
}

export interface ReceivedEvent {
  type: string;
  data: Record<string, unknown>;
  /** Date.now() in this process when the event was read. */
  atMs: number;
}

/**
 * Reads `GET /api/v1/events` of one controller in the background, keeping every event with the
 * time it arrived. The stream ends quietly when the controller stops or `close()` is called.
 */
export class EventRecorder {
  readonly events: ReceivedEvent[] = [];
  readonly #abort = new AbortController();
  readonly #done: Promise<void>;
  #open!: () => void;
  /** Resolves once the stream's response has arrived (the subscription exists). */
  readonly opened: Promise<void>;

  constructor(controllerUrl: string, types?: readonly string[]) {
    this.opened = new Promise((resolve) => {
      this.#open = resolve;
    });
    const query = types ? `?types=${types.join(',')}` : '';
    this.#done = this.#read(`${controllerUrl}/api/v1/events${query}`).catch(() => {});
  }

  of(type: string): ReceivedEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  async close(): Promise<void> {
    this.#abort.abort();
    this.#open();
    await this.#done;
  }

  async #read(url: string): Promise<void> {
    try {
      const response = await fetch(url, { signal: this.#abort.signal });
      this.#open();
      if (!response.body) return;
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        for (;;) {
          const end = buffer.indexOf('\n\n');
          if (end < 0) break;
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = parseEventBlock(block);
          if (event) this.events.push({ ...event, atMs: Date.now() });
        }
      }
    } finally {
      this.#open();
    }
  }
}

export interface ProxiedRequest {
  method: string;
  path: string;
  /** Date.now() in this process when the request arrived. */
  atMs: number;
  status?: number;
  /** The request's body (a POST's `{"url": …}`), when it had one. */
  requestBody?: string;
  /** The response's body, for `GET /workers` only (what the client was told is listed). */
  responseBody?: string;
}

export interface RecordingProxy {
  /** Where to point a client instead of `target`. */
  readonly url: string;
  readonly requests: ProxiedRequest[];
  close(): Promise<void>;
}

/**
 * A reverse proxy on loopback that forwards everything to `target` as is and records each request
 * with the time it arrived: giving each controller replica its own proxy in front of one router
 * tells exactly which replica called the router, and when.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const requests: ProxiedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const record: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      atMs: Date.now(),
    };
    requests.push(record);
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (chunks.length > 0) record.requestBody = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type', 'accept']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const response = await fetch(`${target}${record.path}`, {
        method: record.method,
        headers,
        ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
        signal: AbortSignal.timeout(10_000),
      });
      const body = Buffer.from(await response.arrayBuffer());
      record.status = response.status;
      if (record.method === 'GET' && record.path === '/workers') {
        record.responseBody = body.toString('utf8');
      }
      res.writeHead(response.status, {
        'content-type': response.headers.get('content-type') ?? 'application/octet-stream',
      });
      res.end(body);
    })().catch((error: unknown) => {
      record.status = 502;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`e2e proxy: ${error}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
