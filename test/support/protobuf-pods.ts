/**
 * Pods as JSON-shaped values for the protobuf writer: one with every field the model keeps (in its
 * optional and empty forms, and some it drops), the barest readable one, and a LIST page of them.
 * Shared by the tests of every protobuf pod reader, which must all read them alike.
 */
import { MAX_CACHED_ANNOTATION_LENGTH } from '../../src/model/pod.js';
import { type BuildOptions, encodePodList } from './protobuf-writer.js';

export type Json = Record<string, unknown>;

/** A pod with every field the model keeps, in its optional and empty forms, and some it drops. */
export function fullPod(name: string): Json {
  return {
    metadata: {
      name,
      namespace: 'pools',
      uid: `uid-${name}`,
      resourceVersion: '42',
      creationTimestamp: '2026-01-02T03:00:00Z',
      deletionTimestamp: '2026-01-02T04:00:00Z',
      generateName: 'engine-',
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          name: 'engine-1',
          uid: 'sts-uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
        { apiVersion: 'v1', kind: 'Pod', name: 'other', uid: 'pod-uid-2', controller: false },
        { kind: 'Thing', name: 'quoted "owner" ✓', uid: '' },
      ],
      labels: { 'app.kubernetes.io/name': 'engine', '10': 'numeric key', empty: '' },
      annotations: {
        note: 'héllo ✓ "quoted" \\ back\nslash 🚀',
        long: 'x'.repeat(MAX_CACHED_ANNOTATION_LENGTH + 10),
      },
      managedFields: [{ manager: 'kubelet', operation: 'Update', apiVersion: 'v1' }],
    },
    spec: {
      containers: [
        {
          name: 'engine',
          image: 'engine:1',
          ports: [
            { name: 'http', containerPort: 30000, protocol: 'TCP' },
            { containerPort: 9400, protocol: 'UDP' },
            { name: 'metrics', containerPort: 9000 },
          ],
        },
        { name: '' },
      ],
      nodeSelector: { zone: 'z-1' },
      nodeName: 'gpu-node-7',
      subdomain: 'engines',
      readinessGates: [{ conditionType: 'pool-controller/cell-alive' }],
      schedulingGates: [{ name: 'example.com/capacity' }],
    },
    status: {
      phase: 'Running',
      podIP: '10.1.2.3',
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'ContainersNotReady',
          message: 'containers with unready status',
          lastTransitionTime: '2026-01-02T03:10:00Z',
        },
        { type: 'Warm', status: 'Unknown', lastTransitionTime: null },
      ],
      containerStatuses: [
        {
          name: 'engine',
          state: { running: { startedAt: '2026-01-02T03:05:00Z' } },
          lastState: {},
          ready: true,
          restartCount: 3,
        },
        {
          name: 'sidecar',
          state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off' } },
          lastState: {
            terminated: {
              exitCode: -1,
              reason: 'Error',
              message: 'ended badly',
              startedAt: '2026-01-02T03:06:00Z',
              finishedAt: '2026-01-02T03:07:00Z',
            },
          },
          ready: false,
          restartCount: 0,
        },
      ],
    },
  };
}

/** `json` as a watch event carries it: with its kind. */
export function pod(json: Json): Json {
  return { kind: 'Pod', apiVersion: 'v1', ...json };
}

/** The fewest fields a readable pod can have. */
export function barePod(name: string): Json {
  return { metadata: { name, uid: `uid-${name}` } };
}

export function page(items: Json[], options: BuildOptions = {}): Uint8Array {
  return encodePodList({ metadata: { resourceVersion: '9', continue: 'next' }, items }, options);
}
