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

/**
 * How often `/readyz` is asked. Every 2 ms cost the service ~55 ms of its start (500 probe
 * requests a second on its main thread, and the bench's own CPU, beside a sync on two cores:
 * spawn → ready 1,046 against 992 ms asked every 25 ms, medians of 6 alternated runs at 10,000
 * pods); a kubelet asks every few seconds. The moment it turned ready is placed midway between
 * the send of the last answer that was not 200 and the 200's arrival (`timeServiceToReady`), so
 * the coarser poll costs resolution (about ± half of it), not a bias.
 */
const READY_POLL_MS = 20;

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
    // Turned ready after the last request that found it not ready was sent, and before the 200
    // arrived.
    let notReadySentAt = started;
    let readyAt = Number.NaN;
    await waitFor(
      'the service to be ready',
      async () => {
        if (service.exitCode !== null) throw new Error(`the service exited (${service.exitCode})`);
        const sentAt = performance.now();
        if ((await httpStatus(`http://127.0.0.1:${probePort}/readyz`)) !== 200) {
          notReadySentAt = sentAt;
          return false;
        }
        readyAt = (notReadySentAt + performance.now()) / 2;
        return true;
      },
      undefined,
      READY_POLL_MS,
    );
    return {
      readyMs: readyAt - started,
      cpuMs: processCpuSeconds(pid) * 1000,
      rssBytes: processRssBytes(pid),
    };
  } finally {
    service.kill('SIGTERM');
    await exited;
  }
}
