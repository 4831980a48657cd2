/**
 * What the e2e files that run the built service (`dist/src/main.js`) against a real apiserver
 * share: LeaderWorkerSet-labelled pods as the LWS controller creates them, the cell body the
 * service serves, the shipped Roles bound to the environment's unprivileged user, and a poll.
 * Used by service.test.ts and leader-election.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { RbacAuthorizationV1Api, type V1Pod, type V1Role } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { type KubeEnvironment, onNode } from './environment/index.js';

/** The built service's entry point (`npm run build` first). */
export const MAIN = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));
/** The Role the service needs to watch pods (get/list/watch). */
export const ROLE = new URL('../../deploy/role.yaml', import.meta.url);
/** The Role leader election needs on its Lease (get/create/update). */
export const LEADER_ELECTION_ROLE = new URL(
  '../../deploy/leader-election-role.yaml',
  import.meta.url,
);
const LWS = 'leaderworkerset.sigs.k8s.io';

/** A pod as the LWS controller creates it: labels, size annotation, a named serving port. */
export function lwsPod(pool: string, group: number, worker: number, size: number): V1Pod {
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
          ports: [{ name: 'http', containerPort: 30000 }],
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
}

/** Polls `probe` every 100 ms until it returns a value (not undefined); throws after `ms`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 30_000,
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
      throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
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
