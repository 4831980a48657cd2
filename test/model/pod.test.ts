import { describe, expect, it } from 'vitest';
import {
  MAX_CACHED_ANNOTATION_LENGTH,
  MalformedPodError,
  parsePod,
  podKey,
} from '../../src/model/pod.js';
import { rawPod } from '../support/pods.js';

type Json = Record<string, unknown>;

function edit(change: (raw: Json & { metadata: Json; spec: Json; status: Json }) => void): Json {
  const raw = structuredClone(rawPod({ name: 'a' })) as Json & {
    metadata: Json;
    spec: Json;
    status: Json;
  };
  change(raw);
  return raw;
}

describe('parsePod', () => {
  it('keeps the fields the project reads and drops every other one', () => {
    const pod = parsePod(rawPod({ name: 'a', resourceVersion: '12', labels: { cell: 'c1' } }));
    expect(pod).toEqual({
      metadata: {
        name: 'a',
        namespace: 'default',
        uid: 'uid-default-a',
        resourceVersion: '12',
        creationTimestamp: '2026-01-01T00:00:00Z',
        labels: { cell: 'c1' },
        annotations: { 'example.com/note': 'kept' },
      },
      spec: {
        nodeName: 'node-1',
        nodeSelector: {},
        schedulingGates: [],
        containers: [
          { name: 'engine', ports: [{ name: 'http', containerPort: 30000, protocol: 'TCP' }] },
        ],
      },
      status: {
        phase: 'Running',
        podIP: '10.0.0.1',
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [
          {
            name: 'engine',
            ready: true,
            restartCount: 0,
            state: { running: { startedAt: '2026-01-01T00:00:01Z' } },
            lastState: {},
          },
        ],
      },
    });
  });

  it('keeps owner references as kind, name, uid and a true controller, and only when there are any', () => {
    const pod = parsePod(
      edit((raw) => {
        raw.metadata.ownerReferences = [
          {
            apiVersion: 'apps/v1',
            kind: 'StatefulSet',
            name: 'engine-1',
            uid: 'sts-1',
            controller: true,
            blockOwnerDeletion: true,
          },
          { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u', controller: false },
          { kind: 'Odd', name: null },
        ];
      }),
    );
    expect(pod.metadata.ownerReferences).toEqual([
      { kind: 'StatefulSet', name: 'engine-1', uid: 'sts-1', controller: true },
      { kind: 'Pod', name: 'p', uid: 'u' },
      { kind: 'Odd', name: '', uid: '' },
    ]);
    expect(Object.keys(pod.metadata)).toEqual([
      'name',
      'namespace',
      'uid',
      'resourceVersion',
      'creationTimestamp',
      'labels',
      'annotations',
      'ownerReferences',
    ]);
    const none = parsePod(
      edit((raw) => {
        raw.metadata.ownerReferences = [];
      }),
    );
    expect('ownerReferences' in none.metadata).toBe(false);
    expect(() =>
      parsePod(
        edit((raw) => {
          raw.metadata.ownerReferences = [{ uid: 7 }];
        }),
      ),
    ).toThrow(MalformedPodError);
  });

  it('reads null maps and lists as empty ones', () => {
    const pod = parsePod(
      edit((raw) => {
        raw.metadata.labels = null;
        raw.metadata.annotations = null;
        raw.spec.nodeSelector = null;
        raw.spec.schedulingGates = null;
        raw.status.conditions = null;
        raw.status.containerStatuses = null;
      }),
    );
    expect(pod.metadata.labels).toEqual({});
    expect(pod.metadata.annotations).toEqual({});
    expect(pod.spec.nodeSelector).toEqual({});
    expect(pod.spec.schedulingGates).toEqual([]);
    expect(pod.status.conditions).toEqual([]);
    expect(pod.status.containerStatuses).toEqual([]);
  });

  it('reads a pod without spec or status (as a fresh or a tombstone pod may be)', () => {
    const pod = parsePod({ metadata: { name: 'a', uid: 'u' } });
    expect(pod.spec).toEqual({ nodeSelector: {}, schedulingGates: [], containers: [] });
    expect(pod.status).toEqual({ conditions: [], containerStatuses: [] });
    expect(pod.metadata.namespace).toBe('');
  });

  it.each<[string, (raw: Json & { metadata: Json; spec: Json; status: Json }) => void, string]>([
    ['missing name', (raw) => delete raw.metadata.name, 'metadata.name'],
    ['missing uid', (raw) => delete raw.metadata.uid, 'metadata.uid'],
    [
      'a container status without restartCount',
      (raw) => delete (raw.status.containerStatuses as Json[])[0]?.restartCount,
      'status.containerStatuses.0.restartCount',
    ],
    [
      'a label that is not a string',
      (raw) => (raw.metadata.labels = { cell: 3 }),
      'metadata.labels.cell',
    ],
    [
      'a port that is not a number',
      (raw) => ((raw.spec.containers as Json[])[0]!.ports = [{ containerPort: '80' }]),
      'spec.containers.0.ports.0.containerPort',
    ],
    ['a status that is a string', (raw) => (raw.status = 'Running' as unknown as Json), 'status'],
  ])('rejects a pod with %s, naming the field', (_, change, field) => {
    const raw = edit(change);
    expect(() => parsePod(raw)).toThrow(MalformedPodError);
    expect(() => parsePod(raw)).toThrow(field);
  });

  it.each([null, 'pod', 42, []])('rejects %j as not a pod', (value) => {
    expect(() => parsePod(value)).toThrow(MalformedPodError);
  });
});

describe('podKey', () => {
  it('is namespace/name, or the name alone for a pod without namespace', () => {
    expect(podKey(parsePod(rawPod({ name: 'a', namespace: 'ns' })))).toBe('ns/a');
    expect(podKey(parsePod({ metadata: { name: 'a', uid: 'u' } }))).toBe('a');
  });
});

describe('parsePod and hostile annotations', () => {
  it('keeps at most 1 KiB of an annotation value, saying how much was cut', () => {
    const pod = parsePod({
      metadata: {
        name: 'p',
        uid: 'u',
        annotations: { big: 'x'.repeat(200_000), small: '4' },
      },
    });
    expect(pod.metadata.annotations.small).toBe('4');
    expect(pod.metadata.annotations.big).toBe(
      `${'x'.repeat(MAX_CACHED_ANNOTATION_LENGTH)}… (${200_000 - MAX_CACHED_ANNOTATION_LENGTH} more characters)`,
    );
  });
});
