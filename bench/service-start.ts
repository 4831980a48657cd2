/**
 * The built service's start as a user sees it, for `bench:peers`' `service` variant: spawn
 * dist/src/main.js against a real API server with the service's defaults (protobuf, watch-list),
 * and time spawn → `/readyz` 200 on its probe listener. Unlike the `worker` variant, whose clock
 * starts after its process imported everything, this includes loading the service's modules,
 * reading the kubeconfig and starting the reflector's thread: what client-go's "from `main()`"
 * is compared with.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { processCpuSeconds, processRssBytes } from './process-cost.js';
import { freePort, httpStatus, waitFor } from './service-probe.js';

/** How often `/readyz` is asked: the measurement's resolution. */
const READY_POLL_MS = 2;

export interface ServiceStart {
  /** Spawn → the first `/readyz` 200. */
  readyMs: number;
  /** The service process's CPU (every thread) from its start to ready. */
  cpuMs: number;
  /** Its resident memory when ready. */
  rssBytes: number;
}

/** Starts the built service on `namespace`, waits for it to be ready, measures, stops it. */
export async function timeServiceToReady(
  kubeconfigPath: string,
  namespace: string,
): Promise<ServiceStart> {
  const [apiPort, probePort] = [await freePort(), await freePort()];
  const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
  const started = performance.now();
  const service = spawn(
    process.execPath,
    [
      main,
      '--source=kubernetes',
      `--kubeconfig=${kubeconfigPath}`,
      `--namespace=${namespace}`,
      '--leader-elect=false',
      `--listen=127.0.0.1:${apiPort}`,
      `--health-probe-listen=127.0.0.1:${probePort}`,
      '--log-level=warn',
      '--log-format=json',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const pid = service.pid;
  if (pid === undefined) throw new Error('the service did not start');
  const exited = new Promise<void>((resolve) => service.once('exit', () => resolve()));
  try {
    await waitFor(
      'the service to be ready',
      async () => {
        if (service.exitCode !== null) throw new Error(`the service exited (${service.exitCode})`);
        return (await httpStatus(`http://127.0.0.1:${probePort}/readyz`)) === 200;
      },
      undefined,
      READY_POLL_MS,
    );
    return {
      readyMs: performance.now() - started,
      cpuMs: processCpuSeconds(pid) * 1000,
      rssBytes: processRssBytes(pid),
    };
  } finally {
    service.kill('SIGTERM');
    await exited;
  }
}
