/**
 * What the e2e files that run the built service (`dist/src/main.js`) against a real apiserver
 * share: LeaderWorkerSet-labelled pods as the LWS controller creates them, the cell body the
 * service serves, the shipped Roles bound to the environment's unprivileged user, the service
 * started as a child process and its "listening" log line, and a poll. Used by service.test.ts,
 * leader-election.test.ts, endpointslice-sink.test.ts, status-page.test.ts and (through
 * support-controller.ts) the fleet files.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RbacAuthorizationV1Api, type V1Pod, type V1Role } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { type KubeEnvironment, onNode } from './environment/index.js';

/**
 * The repository's root, whether this module runs from its source (test/e2e/) or compiled into
 * dist/test/e2e/ (bench:flips imports it from there): the nearest folder up with a package.json.
 */
const REPO = ((): string => {
  let folder = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(folder, 'package.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('e2e: no package.json above support-service');
    folder = parent;
  }
  return folder;
})();
/** A file of the repository, as a URL. */
const inRepo = (path: string): URL => pathToFileURL(join(REPO, path));

/** The built service's entry point (`npm run build` first). */
export const MAIN = join(REPO, 'dist/src/main.js');
/** The Role the service needs to watch pods (get/list/watch). */
export const ROLE = inRepo('deploy/role.yaml');
/** The Role leader election needs: create on leases, get/update on its Lease by name. */
export const LEADER_ELECTION_ROLE = inRepo('deploy/leader-election-role.yaml');
/** The optional readiness gate component's Role (patch pods/status). */
export const READINESS_GATE_ROLE = inRepo('deploy/readiness-gate/role.yaml');
/** The optional EndpointSlice component's Role (list/create/patch/delete EndpointSlices). */
export const ENDPOINTSLICES_ROLE = inRepo('deploy/endpointslices/role.yaml');
export const LWS = 'leaderworkerset.sigs.k8s.io';

/**
 * A pod as the LWS controller creates it: labels, size annotation, one container with the serving
 * port named `http` (the default --port-name) at `port`. Already bound to the fake kubelet's node.
 */
export function lwsPod(
  pool: string,
  group: number,
  worker: number,
  size: number,
  port = 30000,
): V1Pod {
  const name = worker === 0 ? `${pool}-${group}` : `${pool}-${group}-${worker}`;
  return onNode({
    metadata: {
      name,
      labels: {
        [`${LWS}/name`]: pool,
        [`${LWS}/group-index`]: String(group),
        [`${LWS}/worker-index`]: String(worker),
      },
      annotations: { [`${LWS}/size`]: String(size) },
    },
    spec: {
      containers: [
        {
          name: 'engine',
          image: 'registry.invalid/sglang:e2e',
          ports: [{ name: 'http', containerPort: port }],
        },
      ],
    },
  });
}

/** The fields of a served cell the e2e files read. */
export interface Cell {
  id: string;
  alive: boolean;
  generation: string;
  address: string | null;
  whyNotAlive: Array<{ reason: string; pods?: string[]; indices?: number[] }>;
  members: Array<{ name: string; restarts: number; deleting: boolean }>;
  lastTransitionTime?: string;
  /** The cell's last alive/not-alive changes, newest first, at this replica's clock. */
  transitions?: Array<{ at: string; alive: boolean; reasons: string[] }>;
}

/** Polls `probe` until it returns a value (not undefined); throws naming `what` and the last error. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Creates each shipped Role in `namespace` and binds it to the environment's unprivileged user,
 * which RBAC grants nothing else: the service run with that user's kubeconfig has exactly what the
 * manifests give it.
 */
export async function bindShippedRoles(
  env: KubeEnvironment,
  namespace: string,
  roles: readonly URL[],
): Promise<void> {
  const rbac = env.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  for (const file of roles) {
    const role = parse(await readFile(file, 'utf8')) as V1Role;
    const name = role.metadata!.name!;
    await rbac.createNamespacedRole({ namespace, body: role });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [
          { kind: 'User', name: env.unprivileged.user, apiGroup: 'rbac.authorization.k8s.io' },
        ],
      },
    });
  }
}

/** The flags that point the service at `namespace` of `env` as the unprivileged user. */
export function kubernetesSourceArgs(env: KubeEnvironment, namespace: string): string[] {
  return [
    '--source',
    'kubernetes',
    '--kubeconfig',
    env.unprivileged.kubeconfigPath,
    '--namespace',
    namespace,
  ];
}

/** The port of the service's `control plane listening` log line in `log`; undefined before it. */
export function listeningPort(log: string): number | undefined {
  const line = log.split('\n').find((l) => l.includes('"control plane listening"'));
  return line ? (JSON.parse(line).address.port as number) : undefined;
}

/** The built service as a child process, with what it wrote to stdout and stderr. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  /** Resolves with `http://127.0.0.1:<port>` once it logged that it listens; throws if it exits. */
  listening(): Promise<string>;
}

/**
 * Starts `node dist/src/main.js ...args --listen 127.0.0.1:0` with nothing of the test runner's
 * environment but PATH (and `env`, e.g. POD_NAME). The caller kills it (`child.kill`) when done.
 */
export function spawnService(
  args: readonly string[],
  env: Record<string, string> = {},
): ServiceProcess {
  const child = spawn(process.execPath, [MAIN, ...args, '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, ...env },
  });
  let output = '';
  const collect = (chunk: string): void => {
    output += chunk;
  };
  child.stdout?.setEncoding('utf8').on('data', collect);
  child.stderr?.setEncoding('utf8').on('data', collect);
  return {
    child,
    output: () => output,
    async listening() {
      const port = await waitFor('the service to listen', async () => {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`the service exited:\n${output}`);
        }
        return listeningPort(output);
      });
      return `http://127.0.0.1:${port}`;
    },
  };
}

/** One Server-Sent Events block (`event: …` and `data: <json>` lines) of `GET /api/v1/events`. */
export function parseEventBlock(
  block: string,
): { type: string; data: Record<string, unknown> } | undefined {
  let type: string | undefined;
  let data: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) type = line.slice('event: '.length);
    else if (line.startsWith('data: ')) data = line.slice('data: '.length);
  }
  return type && data ? { type, data: JSON.parse(data) } : undefined;
}
