/**
 * Real SGLang routers for e2e tests, installed from PyPI by routers.sh into cached virtual
 * environments (keyed by version, outside the repository) and started on a free loopback port.
 *
 *   ensureRouters();                                   // cheap when cached; installs otherwise
 *   const router = await startRouter({ version: 'smg-1.13.0', apiKey: 'k' });
 *   ... router.url ...; await router.restart(); await router.stop();
 *
 * Measured on the two versions:
 * - smg 1.13.0 installs `smg`; sglang-router 0.3.2 installs `sglang-router` (also as `smg` and
 *   `amg`). Both start with `launch --host H --port P`; both need `--prometheus-host/-port` too
 *   (the metrics listener defaults to 0.0.0.0:29000, so two routers would clash).
 * - `--api-key K` guards the worker API (`/workers` answers 401 without `Bearer K`); `/health` and
 *   `/readiness` stay open.
 * - sglang-router 0.3.2 looks for a tokenizer on a model hub at start unless `HF_ENDPOINT` points
 *   somewhere local: it is pointed at a dead loopback port.
 * - `--pd-disaggregation` with no `--prefill`/`--decode` starts on both with an empty list; both
 *   then take `POST /workers {"url", "worker_type": "prefill"|"decode", "bootstrap_port"}`.
 * - SIGTERM waits for in-flight requests (--shutdown-grace-period-secs, default 180; a few seconds
 *   when idle): the tests pass 1.
 * Each router runs in its own process group with its pid in a folder a reaper watches, so a
 * crashed test run leaves no router behind.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cacheRoot, recipeDir } from './binaries.js';
import { freeLoopbackPort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';

export type RouterVersion = 'smg-1.13.0' | 'sglang-router-0.3.2';
export const routerVersions: readonly RouterVersion[] = ['smg-1.13.0', 'sglang-router-0.3.2'];

const executables: Record<RouterVersion, string> = {
  'smg-1.13.0': 'smg',
  'sglang-router-0.3.2': 'sglang-router',
};

/** How long a router gets to answer /health after start: ~0.3 s when idle, margin for 2 cores. */
export const routerReadyTimeoutMs = 60_000;
/** SIGTERM, then SIGKILL after this long. */
const routerStopTimeoutMs = 5_000;

/** The router's executable in its cached virtual environment. */
export function routerExecutable(version: RouterVersion): string {
  return join(cacheRoot(), 'routers', version, 'venv', 'bin', executables[version]);
}

export function routersCached(): boolean {
  return routerVersions.every(
    (version) =>
      existsSync(join(cacheRoot(), 'routers', version, 'installed')) &&
      existsSync(routerExecutable(version)),
  );
}

/** Why real routers cannot run here (no cached venvs and no python3 to make them), or undefined. */
export function routersUnavailableReason(): string | undefined {
  if (routersCached()) return undefined;
  const python = spawnSync(process.env.POOL_ROUTERS_PYTHON ?? 'python3', ['-c', 'import venv'], {
    stdio: 'ignore',
  });
  if (python.status === 0) return undefined;
  return `no python3 with venv to install the SGLang routers (none cached in ${cacheRoot()}/routers)`;
}

/** Installs whatever is missing (routers.sh, output shown); throws naming the failed step. */
export function ensureRouters(): void {
  if (routersCached()) return;
  const script = join(recipeDir, 'routers.sh');
  const result = spawnSync('bash', [script], { stdio: 'inherit' });
  if (result.status !== 0 || !routersCached()) {
    throw new Error(
      `e2e: installing the SGLang routers failed (exit ${result.status ?? result.signal}); ` +
        'the line "routers: FAILED at step: ..." above names the step',
    );
  }
}

export interface RouterOptions {
  version: RouterVersion;
  apiKey?: string;
  /** Seconds between the router's health checks of its workers. */
  healthCheckIntervalSecs?: number;
  /**
   * Starts smg in prefill/decode mode (`--pd-disaggregation`, no worker given at start): workers
   * are then added through `POST /workers` with a `worker_type`.
   */
  pdDisaggregation?: boolean;
}

export interface RunningRouter {
  readonly version: RouterVersion;
  readonly url: string;
  readonly port: number;
  readonly running: boolean;
  /** Kills the router (SIGKILL: a crash) and starts it again on the same port; it forgets every worker. */
  restart(): Promise<void>;
  /** Stops it; `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** The last lines of its log, for failure messages. */
  logTail(): string;
  /** Stops it and removes its temp folder. Never throws. */
  dispose(): Promise<void>;
}

function startReaper(stateDir: string, pidDir: string): ChildProcess {
  const reaper = spawn(
    process.execPath,
    [join(recipeDir, 'reaper.mjs'), String(process.pid), pidDir, stateDir],
    { detached: true, stdio: 'ignore' },
  );
  reaper.unref();
  return reaper;
}

export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  ensureRouters();
  const { version } = options;
  const stateDir = mkdtempSync(join(tmpdir(), `pool-router-${version}-`));
  const pidDir = join(stateDir, 'pids');
  mkdirSync(pidDir);
  const reaper = startReaper(stateDir, pidDir);
  const port = await freeLoopbackPort();
  const metricsPort = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}`;
  const args = [
    // A dead loopback URL: no model hub is reached (0.3.2 looks for a tokenizer at start).
    'HF_ENDPOINT=http://127.0.0.1:9',
    'HF_HUB_OFFLINE=1',
    routerExecutable(version),
    'launch',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--prometheus-host',
    '127.0.0.1',
    '--prometheus-port',
    String(metricsPort),
    '--health-check-interval-secs',
    String(options.healthCheckIntervalSecs ?? 1),
    '--shutdown-grace-period-secs',
    '1',
    ...(options.apiKey ? ['--api-key', options.apiKey] : []),
    ...(options.pdDisaggregation ? ['--pd-disaggregation'] : []),
  ];
  const process_ = new ManagedProcess({
    name: version,
    command: 'env',
    args,
    logFile: join(stateDir, `${version}.log`),
    pidDir,
  });

  const waitReady = async (): Promise<void> => {
    const deadline = Date.now() + routerReadyTimeoutMs;
    while (Date.now() < deadline) {
      if (process_.exitStatus) break;
      try {
        const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    const failure = process_.describeFailure();
    await process_.stop(routerStopTimeoutMs);
    throw new Error(`e2e: router ${version} did not become ready at ${url}\n${failure}`);
  };
  const start = async (): Promise<void> => {
    process_.start();
    await waitReady();
  };
  const stop = (): Promise<void> => process_.stop(routerStopTimeoutMs);

  try {
    await start();
  } catch (error) {
    try {
      if (reaper.pid !== undefined) process.kill(reaper.pid, 'SIGKILL');
    } catch {
      // gone
    }
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }
  return {
    version,
    url,
    port,
    get running() {
      return process_.running;
    },
    async restart() {
      await process_.stop(0); // SIGKILL at once: a crash, not a drain
      await start();
    },
    stop,
    start,
    logTail: () => process_.tail(),
    async dispose() {
      try {
        await stop();
      } catch (error) {
        console.warn(`e2e: stopping router ${version} failed (ignored): ${error}`);
      }
      try {
        if (reaper.pid !== undefined) process.kill(reaper.pid, 'SIGKILL');
      } catch {
        // gone
      }
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
