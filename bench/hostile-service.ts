/**
 * The built service as both `bench:api --hostile` cases start it: its own process
 * (`service-with-gc.js`, full collections on request, `BENCH_CPU_PROF=DIR` for a CPU profile),
 * under the heap cap the image gives it in the chart's default memory limit (`DEPLOYED_HEAP_MIB`),
 * watching a `FakeListServer` over JSON in the namespace `inference`, without leader election,
 * with its API and its probes on two loopback ports, logging warnings only. Resolves once
 * `/readyz` answers 200.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FakeListServer } from './fake-list-server.js';
import { freePort, httpStatus, ServiceQuestions, waitFor } from './service-probe.js';

/** The chart's default memory limit (charts/pool-controller/values.yaml: 512Mi). */
export const CHART_MEMORY_LIMIT_MIB = 512;

/**
 * The main thread's heap cap as deployed: the image's `NODE_OPTIONS=--max-old-space-size-percentage=50`
 * gives V8 half of the container's memory limit. Outside a container that flag would take half of
 * the machine's memory and let the heap grow far past what the pod may use, so RSS measured
 * without a cap says little about the pod; the bench passes the same cap as a size.
 */
export const DEPLOYED_HEAP_MIB = CHART_MEMORY_LIMIT_MIB / 2;

/**
 * The young generation's semi-space as deployed: the image's `NODE_OPTIONS` also holds
 * `--max-semi-space-size=8` (test/package/image-node-options.test.ts keeps the two equal). Left to
 * V8, Node 24 sizes it from the heap and the service held 565 MiB before any client connected.
 */
export const DEPLOYED_SEMI_SPACE_MIB = 8;

/** A started service: its process, where it answers, and how to ask it for its own measures. */
export interface HostileBenchService {
  process: ChildProcess;
  /** The API listener, e.g. `http://127.0.0.1:40123`. */
  base: string;
  /** The probe listener (`--health-probe-listen`). */
  probeBase: string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  questions: ServiceQuestions;
}

/** Starts the service against `fake` with the case's own flags after the shared ones. */
export async function startHostileBenchService(
  fake: FakeListServer,
  caseFlags: readonly string[],
): Promise<HostileBenchService> {
  const [apiPort, probePort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${apiPort}`;
  const probeBase = `http://127.0.0.1:${probePort}`;
  const child = fork(
    fileURLToPath(new URL('./service-with-gc.js', import.meta.url)),
    [
      '--source=kubernetes',
      `--kubeconfig=${fake.writeKubeconfig()}`,
      '--kube-api-content-type=json',
      '--namespace=inference',
      '--leader-elect=false',
      `--listen=127.0.0.1:${apiPort}`,
      `--health-probe-listen=127.0.0.1:${probePort}`,
      '--log-level=warn',
      '--log-format=json',
      ...caseFlags,
    ],
    {
      execArgv: [
        `--max-old-space-size=${DEPLOYED_HEAP_MIB}`,
        `--max-semi-space-size=${DEPLOYED_SEMI_SPACE_MIB}`,
        ...(process.env.BENCH_CPU_PROF
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
          : []),
      ],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  const questions = new ServiceQuestions(child);
  await waitFor(
    'the service to be ready',
    async () => (await httpStatus(`${probeBase}/readyz`)) === 200,
  );
  return { process: child, base, probeBase, exited, questions };
}
