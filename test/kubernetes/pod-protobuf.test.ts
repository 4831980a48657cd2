import { describe, expect, it } from 'vitest';
import { readStatus } from '../../src/kubernetes/client/api-errors.js';
import type { EncodedPod } from '../../src/kubernetes/codec/encoded-pod.js';
import { JsonBuffer } from '../../src/kubernetes/codec/pod-json-writer.js';
import {
  decodeProtobufObject,
  decodeProtobufPodList,
  decodeProtobufWatchEvent,
  isProtobufContentType,
  PROTOBUF_CONTENT_TYPE,
  peekProtobufContinueToken,
} from '../../src/kubernetes/codec/pod-protobuf.js';
import { ProtobufDecodeError } from '../../src/kubernetes/codec/protobuf-reader.js';
import { writeRfc3339Seconds } from '../../src/kubernetes/codec/protobuf-time.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { MalformedPodError, type Pod, parsePod } from '../../src/model/pod.js';
import { decodedEvent, decodedPod } from '../support/decoded-pods.js';
import {
  type BuildOptions,
  encodePod,
  encodePodList,
  encodeStatus,
  encodeWatchEvent,
  K8S_MAGIC,
  k8sEnvelope,
  message,
  ProtoWriter,
} from '../support/protobuf-writer.js';

/**
 * A pod in the API server's JSON shape with every field ./pod.ts reads, in its interesting forms,
 * and many it does not read (managedFields, volumes, env, images, hostIP, ownerReferences, ...),
 * which in protobuf sit before, between and after the read ones.
 */
function richPod(): Record<string, unknown> {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name: 'engine-0',
      generateName: 'engine-',
      namespace: 'pools',
      uid: '6f1c3a52-9d7e-4d0b-8a55-0c2f7f9d1e11',
      resourceVersion: '123456',
      generation: 3,
      creationTimestamp: '2026-01-02T03:04:05Z',
      deletionTimestamp: '2026-01-02T04:00:00Z',
      deletionGracePeriodSeconds: 30,
      labels: {
        'app.kubernetes.io/name': 'engine',
        'leaderworkerset.sigs.k8s.io/group-index': '0',
        empty: '',
      },
      annotations: {
        'example.com/note': 'héllo ✓ 日本語 🚀',
        'example.com/long': `${'ü'.repeat(50)} — a long non-ASCII value`,
        'example.com/bom': '\uFEFFleading mark',
        'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({ spec: { a: 1 } }),
      },
      ownerReferences: [
        {
          apiVersion: 'leaderworkerset.x-k8s.io/v1',
          kind: 'LeaderWorkerSet',
          name: 'engine',
          uid: 'c0ffee00-0000-0000-0000-000000000001',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      finalizers: ['example.com/cleanup'],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-01-02T03:04:05Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-01-02T03:05:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:status': { 'f:conditions': {} } },
          subresource: 'status',
        },
      ],
    },
    spec: {
      volumes: [
        { name: 'cache', emptyDir: {} },
        { name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: '16Gi' } },
        { name: 'models', hostPath: { path: '/mnt/models', type: 'Directory' } },
      ],
      containers: [
        {
          name: 'engine',
          image: 'registry.example.com/engine:1.0',
          command: ['python3', '-m', 'engine'],
          args: ['--port', '30000'],
          ports: [
            { name: 'http', containerPort: 30000, protocol: 'TCP' },
            { containerPort: 9400, protocol: 'UDP', hostPort: 9400 },
          ],
          env: [
            { name: 'MODEL', value: 'big-model' },
            { name: 'GREETING', value: 'grüß dich' },
          ],
          resources: {
            limits: { 'nvidia.com/gpu': '8', memory: '1Ti' },
            requests: { cpu: '32' },
          },
          volumeMounts: [{ name: 'dshm', mountPath: '/dev/shm' }],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
        {
          name: 'sidecar',
          image: 'registry.example.com/sidecar:2.0',
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'Always',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      nodeSelector: { 'nvidia.com/gpu.product': 'H100', 'topology.kubernetes.io/zone': 'z-1' },
      serviceAccountName: 'default',
      serviceAccount: 'default',
      nodeName: 'gpu-node-7',
      hostname: 'engine-0',
      subdomain: 'engines',
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
      ],
      priority: 0,
      enableServiceLinks: true,
      readinessGates: [{ conditionType: 'pool-controller/cell-alive' }],
      schedulingGates: [{ name: 'example.com/capacity' }, { name: 'example.com/quota' }],
    },
    status: {
      observedGeneration: 3,
      phase: 'Running',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: '2026-01-02T03:04:06Z',
        },
        {
          type: 'Ready',
          status: 'False',
          lastProbeTime: null,
          lastTransitionTime: '2026-01-02T03:10:00Z',
          reason: 'ContainersNotReady',
          message: 'containers with unready status: [sidecar]',
          observedGeneration: 3,
        },
        // A condition a kubelet has not stamped: its zero time is JSON null.
        {
          type: 'example.com/Warm',
          status: 'Unknown',
          lastProbeTime: null,
          lastTransitionTime: null,
        },
      ],
      hostIP: '192.0.2.7',
      hostIPs: [{ ip: '192.0.2.7' }],
      podIP: '10.1.2.3',
      podIPs: [{ ip: '10.1.2.3' }, { ip: 'fd00::3' }],
      startTime: '2026-01-02T03:04:07Z',
      containerStatuses: [
        {
          name: 'engine',
          state: { running: { startedAt: '2026-01-02T03:05:00Z' } },
          lastState: {},
          ready: true,
          restartCount: 0,
          image: 'registry.example.com/engine:1.0',
          imageID: 'registry.example.com/engine@sha256:0123456789abcdef',
          containerID: 'containerd://aaaa',
          started: true,
        },
        {
          name: 'sidecar',
          state: {
            waiting: {
              reason: 'CrashLoopBackOff',
              message: 'back-off 5m0s restarting failed container=sidecar',
            },
          },
          lastState: {
            terminated: {
              exitCode: -1,
              signal: 9,
              reason: 'Error',
              message: 'ended badly',
              startedAt: '2026-01-02T03:06:00Z',
              finishedAt: '2026-01-02T03:07:00Z',
              containerID: 'containerd://bbbb',
            },
          },
          ready: false,
          restartCount: 17,
          image: 'registry.example.com/sidecar:2.0',
          imageID: '',
          started: false,
        },
        {
          name: 'oom',
          state: {
            terminated: {
              exitCode: -2147483648,
              reason: 'OOMKilled',
              startedAt: null,
              finishedAt: '2026-01-02T03:08:00Z',
            },
          },
          lastState: { running: { startedAt: null } },
          ready: false,
          restartCount: 2147483647,
        },
      ],
      qosClass: 'Burstable',
      initContainerStatuses: [
        { name: 'init', state: {}, lastState: {}, ready: true, restartCount: 0 },
      ],
    },
  };
}

/** A minimal pod in the API server's JSON shape. */
function smallPod(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    metadata: { name, namespace: 'pools', uid: `uid-${name}`, resourceVersion: '5', ...extra },
    spec: { containers: [{ name: 'engine' }] },
    status: { phase: 'Pending' },
  };
}

/** A reading with its pod parsed back, as the main thread reads it. */
function readable(reading: ReturnType<typeof readFrame>): unknown {
  return reading.kind === 'change' ? { ...reading, event: decodedEvent(reading.event) } : reading;
}

/** The only item of a protobuf PodList holding `pod`, read, as the main thread parses it. */
function decodeOne(pod: Record<string, unknown>, options: BuildOptions = {}): Pod {
  const list = decodeProtobufPodList(
    encodePodList({ metadata: { resourceVersion: '9' }, items: [pod] }, options),
  );
  expect(list.refused).toBeUndefined();
  expect(list.pods).toHaveLength(1);
  return decodedPod(list.pods[0] as EncodedPod);
}

/** A Pod message's bytes, enveloped as the only item of a PodList, read. */
function decodeMessage(podBytes: Uint8Array): Pod {
  const list = decodeProtobufPodList(
    k8sEnvelope(
      { apiVersion: 'v1', kind: 'PodList' },
      message((l) => l.message(1, (m) => m.string(2, '3')).message(2, podBytes)),
    ),
  );
  expect(list.refused).toBeUndefined();
  return decodedPod(list.pods[0] as EncodedPod);
}

describe('decodeProtobufPodList: the same pod as the JSON encoding gives', () => {
  it.each<[string, BuildOptions]>([
    ['as the API server writes it (every field, zero values included)', {}],
    ['with only the fields the JSON has', { style: 'sparse' }],
    ['with fields in descending order', { order: 'descending' }],
    ['with unknown fields of every wire type in every message', { unknownFields: true }],
    [
      'sparse, descending, with unknown fields',
      { style: 'sparse', order: 'descending', unknownFields: true },
    ],
  ])('reads a rich pod %s exactly as parsePod reads its JSON', (_, options) => {
    const json = richPod();
    const expected = parsePod(json);
    expect(parsePod(decodeOne(json, options))).toEqual(expected);
  });

  it('really does carry the interesting values through (the comparison above is not vacuous)', () => {
    const pod = parsePod(decodeOne(richPod()));
    expect(pod.metadata.deletionTimestamp).toBe('2026-01-02T04:00:00Z');
    expect(pod.metadata.annotations['example.com/note']).toBe('héllo ✓ 日本語 🚀');
    expect(pod.metadata.annotations['example.com/bom']).toBe('\uFEFFleading mark');
    expect(pod.metadata.labels.empty).toBe('');
    expect(pod.spec.schedulingGates).toEqual([
      { name: 'example.com/capacity' },
      { name: 'example.com/quota' },
    ]);
    expect(pod.spec.readinessGates).toEqual([{ conditionType: 'pool-controller/cell-alive' }]);
    expect(pod.spec.containers[0]?.ports).toEqual([
      { name: 'http', containerPort: 30000, protocol: 'TCP' },
      { containerPort: 9400, protocol: 'UDP' },
    ]);
    expect(pod.spec.containers[1]).toEqual({ name: 'sidecar', ports: [] });
    expect(pod.status.conditions[2]).toEqual({ type: 'example.com/Warm', status: 'Unknown' });
    const [engine, sidecar, oom] = pod.status.containerStatuses;
    expect(engine).toEqual({
      name: 'engine',
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: '2026-01-02T03:05:00Z' } },
      lastState: {},
    });
    expect(sidecar?.lastState?.terminated?.exitCode).toBe(-1);
    expect(sidecar?.restartCount).toBe(17);
    expect(oom?.state?.terminated).toEqual({
      exitCode: -2147483648,
      reason: 'OOMKilled',
      finishedAt: '2026-01-02T03:08:00Z',
    });
    expect(oom?.lastState).toEqual({ running: {} });
    expect(oom?.restartCount).toBe(2147483647);
  });

  it('leaves out empty omitempty strings, as JSON omits them', () => {
    const json = {
      metadata: { name: 'p', uid: 'u' },
      spec: { containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] },
      status: {
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [
          {
            name: 'c',
            ready: false,
            restartCount: 0,
            state: { waiting: {}, terminated: { exitCode: 0 } },
            lastState: {},
          },
        ],
      },
    };
    // Written as empty strings (gogo writes every non-pointer string), read as absent.
    const pod = decodeOne(json);
    expect(pod).toStrictEqual(parsePod(json));
    expect(pod.metadata).not.toHaveProperty('resourceVersion');
    expect(pod.spec.containers[0]?.ports[0]).toStrictEqual({ containerPort: 80 });
    expect(pod.status.containerStatuses[0]?.state).toStrictEqual({
      waiting: {},
      terminated: { exitCode: 0 },
    });
  });

  it('keeps empty strings of fields JSON does not omit: container and gate names, condition type and status', () => {
    const pod = decodeOne({
      metadata: { name: 'p', uid: 'u' },
      spec: { containers: [{}], schedulingGates: [{}] },
      status: { conditions: [{}], containerStatuses: [{}] },
    });
    expect(pod).toStrictEqual(
      parsePod({
        metadata: { name: 'p', uid: 'u' },
        spec: { containers: [{ name: '' }], schedulingGates: [{ name: '' }] },
        status: {
          conditions: [{ type: '', status: '' }],
          containerStatuses: [
            { name: '', ready: false, restartCount: 0, state: {}, lastState: {} },
          ],
        },
      }),
    );
  });

  it('leaves out a zero metav1.Time (an empty message), as JSON writes null', () => {
    const pod = decodeOne({
      metadata: { name: 'p', uid: 'u' },
      status: {
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: null }],
        containerStatuses: [
          {
            name: 'c',
            restartCount: 0,
            state: { running: { startedAt: null } },
            lastState: { terminated: { exitCode: 1, startedAt: null, finishedAt: null } },
          },
        ],
      },
    });
    expect(pod.status.conditions).toEqual([{ type: 'Ready', status: 'True' }]);
    expect(pod.status.containerStatuses?.[0]).toMatchObject({
      state: { running: {} },
      lastState: { terminated: { exitCode: 1 } },
    });
  });

  it('reads the Unix epoch as a time, not as a zero one, and ignores nanoseconds', () => {
    const time = (seconds: number, nanos: number) => (w: ProtoWriter) =>
      w.varint(1, seconds).varint(2, nanos);
    const metadata = message((m) =>
      m.string(1, 'p').string(5, 'u').message(9, time(1_767_323_045, 999_999_999)),
    );
    const condition = message((c) => c.string(1, 'Ready').string(2, 'True').message(4, time(0, 0)));
    const podBytes = message((p) =>
      p.message(1, metadata).message(3, (s) => s.message(2, condition)),
    );
    const pod = decodeMessage(podBytes);
    expect(pod).toMatchObject({
      metadata: { deletionTimestamp: '2026-01-02T03:04:05Z' },
      status: { conditions: [{ lastTransitionTime: '1970-01-01T00:00:00Z' }] },
    });
    const before1970 = message((m) => m.string(1, 'p').string(5, 'u').message(9, time(-86_400, 0)));
    expect(decodeMessage(message((p) => p.message(1, before1970)))).toMatchObject({
      metadata: { deletionTimestamp: '1969-12-31T00:00:00Z' },
    });
  });

  it('rejects a time no date can hold as undecodable, not with a RangeError', () => {
    const metadata = message((m) => m.string(1, 'p').message(9, (t) => t.varint(1, 2n ** 62n)));
    const bytes = k8sEnvelope(
      { apiVersion: 'v1', kind: 'PodList' },
      message((list) =>
        list.message(
          2,
          message((p) => p.message(1, metadata)),
        ),
      ),
    );
    expect(() => decodeProtobufPodList(bytes)).toThrow(ProtobufDecodeError);
  });

  it('reads a missing restartCount and ready as 0 and false, as Go decodes them', () => {
    const status = message((s) =>
      s.message(8, (c) =>
        c.string(1, 'engine').message(2, (state) => state.message(2, new Uint8Array())),
      ),
    );
    const item = message((p) =>
      p.message(1, (m) => m.string(1, 'p').string(5, 'u')).message(3, status),
    );
    const pod = decodeMessage(item);
    expect(pod.status.containerStatuses).toEqual([
      { name: 'engine', ready: false, restartCount: 0, state: { running: {} } },
    ]);
  });

  it('reads a pod with no spec and no status (fields a sparse writer leaves out)', () => {
    const pod = decodeOne({ metadata: { name: 'bare', uid: 'u' } }, { style: 'sparse' });
    expect(pod).toStrictEqual(parsePod({ metadata: { name: 'bare', uid: 'u' } }));
  });

  it('reads list metadata: resourceVersion, continue and remainingItemCount', () => {
    const list = decodeProtobufPodList(
      encodePodList({
        metadata: {
          selfLink: '',
          resourceVersion: '4242',
          continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ',
          remainingItemCount: 1234,
        },
        items: [smallPod('a'), smallPod('b')],
      }),
    );
    expect(list.metadata).toEqual({
      resourceVersion: '4242',
      continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ',
      remainingItemCount: 1234,
    });
    expect(list.pods.map(decodedPod)).toEqual([parsePod(smallPod('a')), parsePod(smallPod('b'))]);
  });

  it('reads a last page: no continue token, and an empty page', () => {
    const list = decodeProtobufPodList(encodePodList({ metadata: { resourceVersion: '7' } }));
    expect(list.metadata).toEqual({ resourceVersion: '7' });
    expect(list.pods).toEqual([]);
  });

  it('rejects a body of another kind, naming it', () => {
    expect(() => decodeProtobufPodList(encodeStatus({ code: 500 }))).toThrow(
      'expected a PodList, got "Status"',
    );
  });
});

describe('decodeProtobufObject: enveloped Pods and other kinds', () => {
  it("reads each envelope's own type, whatever the envelope read before it said", () => {
    // Envelopes are opened into one reused object: a field one envelope lacks must not keep the
    // value the one before it had.
    const podEvent = encodeWatchEvent({ type: 'ADDED', object: richPod() });
    const status = encodeStatus({ code: 500, message: 'internal error' });
    const untyped = Uint8Array.from([
      ...K8S_MAGIC,
      ...new ProtoWriter().bytes(2, new ProtoWriter().string(1, 'x').finish()).finish(),
    ]);
    const kindOnly = k8sEnvelope({ apiVersion: '', kind: 'ConfigMap' }, new Uint8Array(0));
    for (let round = 0; round < 2; round += 1) {
      expect(decodeProtobufWatchEvent(podEvent).type).toBe('ADDED');
      expect(decodeProtobufObject(untyped)).toStrictEqual({ kind: '', apiVersion: '' });
      expect(decodeProtobufObject(status)).toMatchObject({ kind: 'Status', code: 500 });
      expect(decodeProtobufObject(kindOnly)).toStrictEqual({ kind: 'ConfigMap', apiVersion: '' });
    }
  });

  it("reads a Pod that is no change (a bookmark's) as its kind, apiVersion and metadata", () => {
    const decoded = decodeProtobufObject(encodePod(richPod()));
    expect(decoded).toStrictEqual({
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: {
        resourceVersion: '123456',
        annotations: (richPod().metadata as { annotations: Record<string, string> }).annotations,
      },
    });
  });

  it('reads an unknown kind as just its type, which parsePod rejects', () => {
    const bytes = k8sEnvelope(
      { apiVersion: 'v1', kind: 'Node' },
      message((n) => n.message(1, (m) => m.string(1, 'node-1').string(5, 'uid-1'))),
    );
    const decoded = decodeProtobufObject(bytes);
    expect(decoded).toEqual({ kind: 'Node', apiVersion: 'v1' });
    expect(() => parsePod(decoded)).toThrow(MalformedPodError);
  });
});

describe('decodeProtobufObject: Status, as readStatus reads its JSON', () => {
  const statuses: Array<[string, Record<string, unknown>]> = [
    [
      'a 429 with causes and retryAfterSeconds',
      {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'too many requests, please try again later',
        reason: 'TooManyRequests',
        details: {
          name: 'pods',
          kind: 'pods',
          causes: [
            { reason: 'FieldValueInvalid', message: 'bad', field: 'spec.x' },
            { reason: 'ResourceVersionTooLarge', message: 'Too large resource version' },
            { message: 'a cause without a reason' },
          ],
          retryAfterSeconds: 7,
        },
        code: 429,
      },
    ],
    [
      'a 410 Expired',
      {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: { resourceVersion: '' },
        status: 'Failure',
        message: 'too old resource version: 1 (2)',
        reason: 'Expired',
        code: 410,
      },
    ],
    [
      'a Status with neither code nor retryAfterSeconds (both omitempty in JSON)',
      {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'something went wrong',
        details: { causes: [{ reason: 'Weird' }] },
      },
    ],
  ];

  it.each(statuses)('reads %s', (_, json) => {
    for (const options of [{}, { style: 'sparse' as const, unknownFields: true }]) {
      const decoded = decodeProtobufObject(encodeStatus(json, options));
      expect(readStatus(decoded)).toEqual(readStatus(json));
    }
  });

  it('reads every field readStatus uses', () => {
    const [, json] = statuses[0] as [string, Record<string, unknown>];
    expect(readStatus(decodeProtobufObject(encodeStatus(json)))).toEqual({
      code: 429,
      reason: 'TooManyRequests',
      message: 'too many requests, please try again later',
      causes: ['FieldValueInvalid', 'ResourceVersionTooLarge'],
      retryAfterMs: 7_000,
    });
  });

  it('leaves out a zero code and retryAfterSeconds, which JSON omits', () => {
    const decoded = decodeProtobufObject(encodeStatus({ status: 'Failure', details: {} }));
    expect(decoded).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      details: {},
    });
  });
});

describe('decodeProtobufWatchEvent, then readFrame: as the JSON frame reads', () => {
  const events: Array<[string, { type: string; object: Record<string, unknown> }]> = [
    ['ADDED', { type: 'ADDED', object: richPod() }],
    ['MODIFIED', { type: 'MODIFIED', object: smallPod('m', { resourceVersion: '88' }) }],
    ['DELETED', { type: 'DELETED', object: smallPod('d', { resourceVersion: '99' }) }],
    [
      'BOOKMARK',
      {
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          apiVersion: 'v1',
          metadata: {
            resourceVersion: '12345',
            annotations: { 'k8s.io/initial-events-end': 'true' },
          },
          spec: { containers: null },
          status: {},
        },
      },
    ],
    [
      'ERROR (a Status)',
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'too old resource version: 5 (10)',
          reason: 'Expired',
          code: 410,
        },
      },
    ],
  ];

  it.each(events)('reads %s', (_, event) => {
    for (const options of [{}, { order: 'descending' as const, unknownFields: true }]) {
      const decoded = decodeProtobufWatchEvent(encodeWatchEvent(event, options));
      expect(decoded.type).toBe(event.type);
      expect(readable(readFrame({ kind: 'decoded', value: decoded }))).toEqual(
        readable(readFrame({ kind: 'decoded', value: event })),
      );
    }
  });

  it('gives ADDED a change with the pod, DELETED its last state, BOOKMARK its version', () => {
    const read = (index: number) => {
      const [, event] = events[index] as (typeof events)[number];
      return readFrame({
        kind: 'decoded',
        value: decodeProtobufWatchEvent(encodeWatchEvent(event)),
      });
    };
    expect(read(0)).toMatchObject({
      kind: 'change',
      type: 'ADDED',
      resourceVersion: '123456',
      event: { type: 'upsert', key: 'pools/engine-0' },
    });
    expect(read(2)).toMatchObject({
      kind: 'change',
      event: { type: 'delete', key: 'pools/d' },
      resourceVersion: '99',
    });
    // The fixture's bookmark is a watch-list's last one: its annotation survives the decoder.
    expect(read(3)).toEqual({
      kind: 'bookmark',
      type: 'BOOKMARK',
      resourceVersion: '12345',
      initialEventsEnd: true,
    });
    expect(read(4)).toEqual({
      kind: 'failure',
      type: 'ERROR',
      failure: {
        kind: 'status',
        status: {
          code: 410,
          reason: 'Expired',
          message: 'too old resource version: 5 (10)',
          causes: [],
        },
        inStream: true,
      },
    });
  });

  it('reads an object of another kind as one parsePod rejects: a malformed-pod failure', () => {
    const bytes = message((w) =>
      w
        .string(1, 'ADDED')
        .message(2, (raw) =>
          raw.bytes(1, k8sEnvelope({ apiVersion: 'v1', kind: 'Node' }, new Uint8Array())),
        ),
    );
    expect(readFrame({ kind: 'decoded', value: decodeProtobufWatchEvent(bytes) })).toMatchObject({
      kind: 'failure',
      failure: { kind: 'malformed-pod' },
    });
  });
});

describe('malformed protobuf bodies are ProtobufDecodeError', () => {
  const list = () =>
    encodePodList({
      metadata: { resourceVersion: '1', continue: 'next' },
      items: [richPod(), smallPod('b')],
    });

  it('rejects a body without the "k8s\\0" prefix', () => {
    const bytes = list();
    for (const bad of [
      bytes.subarray(4),
      Uint8Array.from([0x6b, 0x38, 0x73, 0x01, ...bytes.subarray(4)]),
      new TextEncoder().encode('{"kind":"PodList"}'),
      new Uint8Array(),
      K8S_MAGIC.subarray(0, 3),
    ]) {
      expect(() => decodeProtobufPodList(bad)).toThrow(ProtobufDecodeError);
      expect(() => decodeProtobufObject(bad)).toThrow(ProtobufDecodeError);
    }
    expect(() => decodeProtobufPodList(bytes.subarray(4))).toThrow('no k8s magic prefix');
  });

  it('rejects a list cut short anywhere, but right after its type meta', () => {
    const bytes = list();
    // "k8s\0", then the envelope's typeMeta field: tag, one-byte length, {apiVersion, kind}.
    const typeMetaEnd = K8S_MAGIC.length + 2 + (bytes[K8S_MAGIC.length + 1] as number);
    // The envelope ends with contentEncoding and contentType, both empty: two bytes each.
    const bodyEnd = bytes.length - 4;
    for (let cut = 1; cut < bodyEnd; cut += 1) {
      if (cut === typeMetaEnd) continue;
      expect(() => decodeProtobufPodList(bytes.subarray(0, cut)), `cut at ${cut}`).toThrow(
        ProtobufDecodeError,
      );
    }
    // Cut where a field ends: a list with no body at all, which has no resourceVersion (and
    // which the LIST then refuses as malformed).
    expect(decodeProtobufPodList(bytes.subarray(0, typeMetaEnd))).toMatchObject({
      metadata: {},
      pods: [],
    });
    expect(decodeProtobufPodList(bytes.subarray(0, bodyEnd)).pods).toHaveLength(2);
  });

  it('rejects a truncated pod, Status and watch event', () => {
    const pod = encodePod(richPod());
    expect(() => decodeProtobufObject(pod.subarray(0, pod.length - 40))).toThrow(
      ProtobufDecodeError,
    );
    const status = encodeStatus({ code: 500, message: 'internal error' });
    expect(() => decodeProtobufObject(status.subarray(0, status.length - 10))).toThrow(
      ProtobufDecodeError,
    );
    const event = encodeWatchEvent({ type: 'ADDED', object: richPod() });
    expect(() => decodeProtobufWatchEvent(event.subarray(0, event.length - 1))).toThrow(
      ProtobufDecodeError,
    );
    expect(() => decodeProtobufWatchEvent(event.subarray(0, 3))).toThrow(ProtobufDecodeError);
  });

  it('rejects a length inside a pod that runs past its enclosing message', () => {
    // An item of 10 bytes whose metadata field claims 50: the bytes after the item (more
    // items) must not be read as its metadata.
    const item = new ProtoWriter().raw([0x0a, 50]).raw(new Uint8Array(8)).finish();
    const bytes = k8sEnvelope(
      { apiVersion: 'v1', kind: 'PodList' },
      message((l) => l.bytes(2, item).bytes(2, new Uint8Array(60))),
    );
    expect(() => decodeProtobufPodList(bytes)).toThrow(
      'length-delimited field runs past its message',
    );
  });

  it('rejects a known field with the wrong wire type in the envelope', () => {
    const bytes = Uint8Array.from([...K8S_MAGIC, 0x08, 0x01]); // typeMeta as a varint
    expect(() => decodeProtobufObject(bytes)).toThrow('typeMeta has wire type 0, expected 2');
  });

  it('rejects a non-empty contentEncoding (a gzip- or otherwise encoded raw)', () => {
    const bytes = encodePodList(
      { metadata: { resourceVersion: '1' }, items: [] },
      { envelope: { contentEncoding: 'gzip' } },
    );
    expect(() => decodeProtobufPodList(bytes)).toThrow(ProtobufDecodeError);
    expect(() => decodeProtobufPodList(bytes)).toThrow('unsupported content encoding "gzip"');
    expect(() =>
      decodeProtobufObject(encodeStatus({}, { envelope: { contentEncoding: 'x' } })),
    ).toThrow(ProtobufDecodeError);
  });

  it('accepts a contentType and unknown envelope fields', () => {
    const bytes = encodePodList(
      { metadata: { resourceVersion: '1' }, items: [smallPod('a')] },
      { envelope: { contentType: PROTOBUF_CONTENT_TYPE, unknownFields: true } },
    );
    expect(decodeProtobufPodList(bytes).pods).toHaveLength(1);
  });
});

describe('peekProtobufContinueToken: the next page is requested before this one is decoded', () => {
  const page = (metadata: Record<string, unknown>, options: BuildOptions = {}) =>
    encodePodList({ metadata, items: [richPod(), smallPod('b')] }, options);

  it("reads the token from the list's metadata, its first field", () => {
    expect(peekProtobufContinueToken(page({ resourceVersion: '9', continue: 'eyJydiI6OX0' }))).toBe(
      'eyJydiI6OX0',
    );
    expect(
      peekProtobufContinueToken(
        page(
          { resourceVersion: '9', continue: 'tok', remainingItemCount: 3 },
          { envelope: { unknownFields: true, contentType: PROTOBUF_CONTENT_TYPE } },
        ),
      ),
    ).toBe('tok');
  });

  it('answers undefined for a last page', () => {
    expect(peekProtobufContinueToken(page({ resourceVersion: '9' }))).toBe(undefined);
  });

  it('answers undefined when the metadata is not the first field (it reads only the head)', () => {
    expect(peekProtobufContinueToken(page({ continue: 'tok' }, { order: 'descending' }))).toBe(
      undefined,
    );
    expect(peekProtobufContinueToken(page({ continue: 'tok' }, { unknownFields: true }))).toBe(
      undefined,
    );
  });

  it('answers undefined for garbage, JSON, an empty body, or a body of only the prefix', () => {
    const garbage = Uint8Array.from({ length: 512 }, (_, index) => (index * 131 + 7) % 256);
    for (const bytes of [
      garbage,
      Uint8Array.from([...K8S_MAGIC, ...garbage]),
      new TextEncoder().encode('{"metadata":{"continue":"x"}}'),
      new Uint8Array(),
      K8S_MAGIC,
    ]) {
      expect(peekProtobufContinueToken(bytes)).toBe(undefined);
    }
  });

  it('reads the token from the head of a page still arriving, and never throws, wherever it is cut', () => {
    const bytes = page({ resourceVersion: '9', continue: 'the-token' });
    // The cuts that answer: from the first byte after the list's metadata on.
    let firstAnswer = -1;
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      const answer = peekProtobufContinueToken(bytes.subarray(0, cut));
      if (answer === undefined) {
        expect(firstAnswer).toBe(-1);
        continue;
      }
      expect(answer).toBe('the-token');
      if (firstAnswer < 0) firstAnswer = cut;
    }
    expect(firstAnswer).toBeGreaterThan(0);
    // The items are not needed: a head cut inside the first pod names the token.
    expect(firstAnswer).toBeLessThan(bytes.length - 10);
    expect(peekProtobufContinueToken(bytes.subarray(0, 10))).toBe(undefined);
  });
});

describe('writeRfc3339Seconds: Unix seconds as metav1.Time marshals to JSON', () => {
  /** The reference: `Date`, to the second. */
  const viaDate = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
  /** The JSON string written after a byte already in the buffer, parsed back. */
  const rfc3339Seconds = (seconds: number): string => {
    const out = new JsonBuffer(4);
    out.byte(0x5b); // `[`: a time is written at the buffer's end, not its start
    writeRfc3339Seconds(out, seconds);
    out.byte(0x5d);
    return (
      JSON.parse(new TextDecoder().decode(out.bytes.subarray(0, out.length))) as string[]
    )[0] as string;
  };

  it.each<[number, string]>([
    [0, '1970-01-01T00:00:00Z'],
    [-1, '1969-12-31T23:59:59Z'],
    [1_767_323_045, '2026-01-02T03:04:05Z'],
    [951_782_400, '2000-02-29T00:00:00Z'],
    [1_709_164_800, '2024-02-29T00:00:00Z'],
    [-2_203_891_200, '1900-03-01T00:00:00Z'],
    [-62_167_219_200, '0000-01-01T00:00:00Z'],
    [253_402_300_799, '9999-12-31T23:59:59Z'],
  ])('%d → %s', (seconds, text) => {
    expect(rfc3339Seconds(seconds)).toBe(text);
  });

  it('agrees with Date on every day from 1890 to 2110, at a different time of each day', () => {
    const start = Date.UTC(1890, 0, 1) / 1000;
    for (let day = 0; day < 80_400; day += 1) {
      const seconds = start + day * 86_400 + ((day * 7_919) % 86_400);
      expect(rfc3339Seconds(seconds)).toBe(viaDate(seconds));
    }
  });

  it('agrees with Date across the years 0000 to 9999', () => {
    const first = -62_167_219_200;
    const last = 253_402_300_799;
    for (let step = 0; step <= 10_000; step += 1) {
      const seconds = Math.floor(first + ((last - first) * step) / 10_000);
      expect(rfc3339Seconds(seconds)).toBe(viaDate(seconds));
    }
  });

  it('formats years Go cannot marshal as Date does, and rejects what Date cannot hold', () => {
    expect(rfc3339Seconds(253_402_300_800)).toBe('+010000-01-01T00:00:00Z');
    expect(rfc3339Seconds(-62_167_219_201)).toBe('-000001-12-31T23:59:59Z');
    expect(() => rfc3339Seconds(2 ** 62)).toThrow(ProtobufDecodeError);
    expect(() => rfc3339Seconds(-(2 ** 62))).toThrow(ProtobufDecodeError);
    expect(rfc3339Seconds(0)).toBe('1970-01-01T00:00:00Z');
  });
});

describe('isProtobufContentType', () => {
  it.each<[string | undefined, boolean]>([
    ['application/vnd.kubernetes.protobuf', true],
    ['application/vnd.kubernetes.protobuf;stream=watch', true],
    ['application/vnd.kubernetes.protobuf; stream=watch', true],
    ['Application/VND.Kubernetes.Protobuf ; charset=binary', true],
    ['  application/vnd.kubernetes.protobuf  ', true],
    ['application/json', false],
    ['application/json;stream=watch', false],
    ['application/vnd.kubernetes.protobuf-extra', false],
    ['application/x-protobuf', false],
    ['', false],
    [undefined, false],
  ])('%j → %s', (contentType, expected) => {
    expect(isProtobufContentType(contentType)).toBe(expected);
  });
});

describe('the test builders are not the decoder: a hand-assembled pod reads the same', () => {
  it('reads bytes written field by field, without the schema-driven builder', () => {
    const bytes = message((p) =>
      p
        .message(1, (m) =>
          m
            .string(1, 'hand')
            .string(3, 'ns')
            .string(5, 'uid-hand')
            .string(6, '77')
            .mapEntry(11, 'a', '1')
            .mapEntry(11, 'b', '2'),
        )
        .message(2, (s) =>
          s
            .message(2, (c) =>
              c.string(1, 'main').message(6, (port) => port.varint(3, 8080).string(4, 'TCP')),
            )
            .mapEntry(7, 'zone', 'z')
            .string(10, 'node')
            .message(38, (gate) => gate.string(1, 'g')),
        )
        .message(3, (s) =>
          s
            .string(1, 'Running')
            .string(6, '10.0.0.9')
            .message(8, (c) =>
              c
                .string(1, 'main')
                .message(2, (state) => state.message(3, (t) => t.varint(1, -9).string(3, 'Killed')))
                .varint(4, true)
                .varint(5, 4),
            ),
        ),
    );
    expect(decodeMessage(bytes)).toEqual(
      parsePod({
        metadata: {
          name: 'hand',
          namespace: 'ns',
          uid: 'uid-hand',
          resourceVersion: '77',
          labels: { a: '1', b: '2' },
        },
        spec: {
          containers: [{ name: 'main', ports: [{ containerPort: 8080, protocol: 'TCP' }] }],
          nodeSelector: { zone: 'z' },
          nodeName: 'node',
          schedulingGates: [{ name: 'g' }],
        },
        status: {
          phase: 'Running',
          podIP: '10.0.0.9',
          containerStatuses: [
            {
              name: 'main',
              ready: true,
              restartCount: 4,
              state: { terminated: { exitCode: -9, reason: 'Killed' } },
            },
          ],
        },
      }),
    );
  });
});
