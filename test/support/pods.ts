/**
 * Pods as the API server sends them (with the fields the partial view drops, such as
 * managedFields and image names), for fakes of the LIST/WATCH API and for fixtures.
 */
import { type Pod, parsePod } from '../../src/model/pod.js';

export interface RawPodSpec {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  phase?: string;
  podIP?: string;
  restartCount?: number;
}

/** A pod object in the API server's JSON shape. */
export function rawPod(spec: RawPodSpec): Record<string, unknown> {
  const namespace = spec.namespace ?? 'default';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: spec.name,
      namespace,
      uid: spec.uid ?? `uid-${namespace}-${spec.name}`,
      resourceVersion: spec.resourceVersion ?? '1',
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: spec.labels ?? { app: 'engine' },
      annotations: { 'example.com/note': 'kept' },
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': { '.': {} } } },
        },
      ],
    },
    spec: {
      nodeName: 'node-1',
      containers: [
        {
          name: 'engine',
          image: 'registry.example.com/engine:1.0',
          ports: [{ name: 'http', containerPort: 30000, protocol: 'TCP' }],
          resources: { limits: { 'nvidia.com/gpu': '8' } },
        },
      ],
    },
    status: {
      phase: spec.phase ?? 'Running',
      podIP: spec.podIP ?? '10.0.0.1',
      conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null }],
      containerStatuses: [
        {
          name: 'engine',
          ready: true,
          restartCount: spec.restartCount ?? 0,
          image: 'registry.example.com/engine:1.0',
          imageID: 'sha256:0123',
          state: { running: { startedAt: '2026-01-01T00:00:01Z' } },
          lastState: {},
        },
      ],
    },
  };
}

/** The same pod as the reflector publishes it. */
export function pod(spec: RawPodSpec): Pod {
  return parsePod(rawPod(spec));
}
