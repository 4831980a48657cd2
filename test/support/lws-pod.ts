/**
 * Builds pods the way a LeaderWorkerSet and a kubelet would leave them, through the real `parsePod`
 * so test pods have exactly the shape the reflector delivers.
 */
import { type Pod, parsePod } from '../../src/model/pod.js';

export interface LwsPodOptions {
  pool?: string;
  /** Omit the group-index label with `null`. */
  group?: number | string | null;
  /** Omit the worker-index label with `null`. */
  worker?: number | string | null;
  /** Omit the size annotation with `null`. */
  size?: number | string | null;
  name?: string;
  namespace?: string;
  uid?: string;
  ready?: boolean;
  phase?: string;
  podIP?: string | null;
  restarts?: number[];
  deleting?: boolean;
  node?: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  /** Drop the pool label entirely. */
  noPoolLabel?: boolean;
  /** Annotations besides the size annotation. */
  annotations?: Record<string, string>;
  /** Condition types of `spec.readinessGates`. */
  readinessGates?: string[];
  /** `ContainersReady`; default `ready`. */
  containersReady?: boolean;
  /** Conditions after Ready and ContainersReady (a readiness gate's, say). */
  conditions?: Array<{
    type: string;
    status: string;
    reason?: string;
    message?: string;
    lastTransitionTime?: string;
  }>;
  resourceVersion?: string;
  /** `leaderworkerset.sigs.k8s.io/template-revision-hash`; absent by default. */
  revision?: string;
  /** `metadata.creationTimestamp`; absent by default. */
  created?: string;
  /** Controller owner: `workerSet` is LWS's worker StatefulSet (named after the leader pod). */
  owner?: { kind?: string; name?: string; uid: string };
}

export function lwsPod(options: LwsPodOptions = {}): Pod {
  const pool = options.pool ?? 'engine';
  const group = options.group === undefined ? 0 : options.group;
  const worker = options.worker === undefined ? 0 : options.worker;
  const size = options.size === undefined ? null : options.size;
  const name =
    options.name ??
    (worker === 0 || worker === null
      ? `${pool}-${group ?? 'x'}`
      : `${pool}-${group ?? 'x'}-${worker}`);
  const labels: Record<string, string> = {};
  if (!options.noPoolLabel) labels['leaderworkerset.sigs.k8s.io/name'] = pool;
  if (group !== null) labels['leaderworkerset.sigs.k8s.io/group-index'] = String(group);
  if (worker !== null) labels['leaderworkerset.sigs.k8s.io/worker-index'] = String(worker);
  if (options.revision !== undefined) {
    labels['leaderworkerset.sigs.k8s.io/template-revision-hash'] = options.revision;
  }
  const annotations: Record<string, string> = { ...options.annotations };
  if (size !== null) annotations['leaderworkerset.sigs.k8s.io/size'] = String(size);
  const ready = options.ready ?? true;
  return parsePod({
    metadata: {
      name,
      namespace: options.namespace ?? 'ns',
      uid: options.uid ?? `uid-${name}`,
      labels,
      annotations,
      ...(options.resourceVersion !== undefined
        ? { resourceVersion: options.resourceVersion }
        : {}),
      ...(options.created !== undefined ? { creationTimestamp: options.created } : {}),
      ...(options.deleting ? { deletionTimestamp: '2025-01-01T00:00:00Z' } : {}),
      ...(options.owner
        ? {
            ownerReferences: [
              {
                apiVersion: 'apps/v1',
                kind: options.owner.kind ?? 'StatefulSet',
                name: options.owner.name ?? `${pool}-${group ?? 'x'}`,
                uid: options.owner.uid,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          }
        : {}),
    },
    spec: {
      nodeName: options.node ?? 'node-a',
      ...(options.readinessGates
        ? { readinessGates: options.readinessGates.map((conditionType) => ({ conditionType })) }
        : {}),
      containers: [
        {
          name: 'server',
          ports: options.ports ?? [{ name: 'http', containerPort: 30000 }],
        },
      ],
    },
    status: {
      phase: options.phase ?? 'Running',
      ...(options.podIP === null ? {} : { podIP: options.podIP ?? '10.0.0.1' }),
      conditions: [
        { type: 'Ready', status: ready ? 'True' : 'False' },
        ...(options.containersReady !== undefined || options.readinessGates
          ? [
              {
                type: 'ContainersReady',
                status: (options.containersReady ?? ready) ? 'True' : 'False',
              },
            ]
          : []),
        ...(options.conditions ?? []),
      ],
      containerStatuses: (options.restarts ?? [0]).map((restartCount, i) => ({
        name: `c${i}`,
        ready,
        restartCount,
      })),
    },
  });
}
