import { describe, expect, it } from 'vitest';
import {
  type EncodedChange,
  encodePod,
  readPodValue,
} from '../../src/kubernetes/codec/encoded-pod.js';
import {
  writeChangeEventsJson,
  writeEncodedPodsJson,
  writePodsJson,
} from '../../src/kubernetes/codec/pod-json-writer.js';
import type { ChangeEvent } from '../../src/kubernetes/reflector-worker/protocol.js';
import {
  conformsToPodWire,
  MAX_CACHED_ANNOTATION_LENGTH,
  type Pod,
  parsePod,
} from '../../src/model/pod.js';
import { AWKWARD_STRINGS } from '../support/awkward-strings.js';

const stringified = (value: unknown): string => JSON.stringify(value);
const written = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

const AWKWARD = AWKWARD_STRINGS;

/** A pod as the API server's JSON might spell it: nulls, absent fields, awkward strings. */
function wireWith(text: string, index: number): Record<string, unknown> {
  return {
    metadata: {
      name: `p-${index}`,
      namespace: index % 2 ? 'ns' : undefined,
      uid: `u-${index}`,
      resourceVersion: index % 3 ? String(index) : undefined,
      deletionTimestamp: index % 4 ? undefined : '2026-01-02T04:00:00Z',
      labels: { [text]: text, '10': 'numeric key first', plain: 'v' },
      annotations: index % 2 ? { note: text } : null,
    },
    spec:
      index % 5 === 0
        ? null
        : {
            nodeName: text,
            nodeSelector: { zone: text },
            schedulingGates: [{ name: text }],
            readinessGates: index % 2 ? [{ conditionType: text }] : [],
            containers: [
              {
                name: text,
                ports: [
                  { name: 'http', containerPort: 30000, protocol: 'TCP' },
                  { containerPort: 0 },
                ],
              },
              { name: 'bare' },
            ],
          },
    status: {
      phase: text || undefined,
      podIP: index % 2 ? '10.0.0.1' : null,
      conditions: [
        { type: 'Ready', status: 'True', message: text, lastTransitionTime: 'x' },
        { type: text, status: '' },
      ],
      containerStatuses: [
        {
          name: text,
          ready: index % 2 === 0,
          restartCount: index * 1_000_003,
          state: { waiting: { reason: text }, running: {}, terminated: null },
          lastState: { terminated: { exitCode: -2_147_483_648, message: text } },
        },
        { name: 'c', restartCount: 0 },
      ],
    },
  };
}

function podWith(text: string, index: number): Pod {
  return parsePod(wireWith(text, index));
}

describe('writePodsJson: the hop JSON.stringify would have written, byte for byte', () => {
  it('writes pods with every awkward string, optional field and number as JSON.stringify does', () => {
    const pods = AWKWARD.map(podWith);
    expect(written(writePodsJson(pods))).toBe(stringified(pods));
    for (const [index, pod] of pods.entries()) {
      expect(written(writePodsJson([pod])), AWKWARD[index]).toBe(stringified([pod]));
    }
    expect(written(writePodsJson([]))).toBe('[]');
  });

  it('agrees with JSON.stringify on random strings', () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = ['a', 'Z', '0', ' ', '"', '\\', '\n', '\u0001', 'é', '✓', '\ud83d', '\ude80'];
    for (let round = 0; round < 200; round += 1) {
      let text = '';
      const length = Math.floor(random() * 40);
      for (let index = 0; index < length; index += 1) {
        text += alphabet[Math.floor(random() * alphabet.length)];
      }
      const pods = [podWith(text, round)];
      expect(written(writePodsJson(pods))).toBe(stringified(pods));
    }
  });

  it('gives each message a buffer of its own, so transferring one detaches nothing else', () => {
    const first = writePodsJson([podWith('a', 1)]);
    const second = writePodsJson([podWith('b', 2)]);
    expect(first.buffer).not.toBe(second.buffer);
    expect(first.byteOffset).toBe(0);
    expect(first.buffer.byteLength).toBe(first.length);
    expect(written(first)).toBe(stringified([podWith('a', 1)]));
  });

  it('grows past its starting buffer for a large chunk, and writes the next message as well', () => {
    const pods = Array.from({ length: 300 }, (_, index) => podWith('x'.repeat(300), index));
    const large = writePodsJson(pods);
    expect(large.length).toBeGreaterThan(1024 * 1024);
    expect(written(large)).toBe(stringified(pods));
    const next = [podWith('after', 1)];
    expect(written(writePodsJson(next))).toBe(stringified(next));
  });
});

describe('writeChangeEventsJson', () => {
  it('writes upserts and deletes of encoded pods, with and without a last object, as JSON.stringify writes the pods', () => {
    const pods = [podWith('é "q"', 1), podWith('', 2)] as const;
    const events: ChangeEvent[] = [
      { type: 'upsert', key: 'ns/p-1', object: pods[0] },
      { type: 'delete', key: 'ns/p-2', lastObject: pods[1] },
      { type: 'delete', key: 'weird "key"' },
    ];
    const encoded: EncodedChange[] = [
      { type: 'upsert', key: 'ns/p-1', object: encodePod(pods[0]) },
      { type: 'delete', key: 'ns/p-2', lastObject: encodePod(pods[1]) },
      { type: 'delete', key: 'weird "key"' },
    ];
    expect(written(writeChangeEventsJson(encoded))).toBe(stringified(events));
  });
});

describe('writeEncodedPodsJson', () => {
  it('joins encoded pods into the JSON of Pod[], as writePodsJson writes the pods', () => {
    const pods = Array.from({ length: 5 }, (_, index) => podWith(AWKWARD[index] ?? '', index));
    expect(written(writeEncodedPodsJson(pods.map(encodePod)))).toBe(stringified(pods));
    expect(written(writeEncodedPodsJson([]))).toBe('[]');
  });

  it('keeps each encoded pod as written while many more are encoded after it', () => {
    // Pods share blocks of bytes: a full block must be left alone, never written over.
    const pods = Array.from({ length: 600 }, (_, index) => podWith('y'.repeat(index % 700), index));
    const encoded = pods.map(encodePod);
    encoded.forEach((pod, index) => {
      expect(written(pod.json)).toBe(stringified(pods[index]));
    });
  });
});

describe('readPodValue: a JSON pod written straight from its value', () => {
  /** Wire pods that take the direct path, each with something `shape` treats specially. */
  const wires: Record<string, unknown>[] = [
    ...AWKWARD.map(wireWith),
    {
      metadata: {
        name: 'bare',
        uid: 'u',
        resourceVersion: '',
        creationTimestamp: null,
        ownerReferences: [],
      },
    },
    {
      metadata: {
        name: 'owned',
        namespace: 'ns',
        uid: 'u',
        labels: null,
        annotations: { long: 'x'.repeat(MAX_CACHED_ANNOTATION_LENGTH + 7), short: 'y' },
        ownerReferences: [
          { kind: 'LeaderWorkerSet', name: 'lws', uid: 'o', controller: true },
          { controller: false },
          { kind: null, name: 'n', controller: null },
        ],
      },
      spec: { readinessGates: [{ conditionType: null }], containers: null, nodeSelector: null },
      status: null,
    },
    {
      metadata: { name: 'states', namespace: '', uid: 'u', labels: { 2: 'b', a: 'x', 1: 'a' } },
      spec: {},
      status: {
        phase: null,
        containerStatuses: [
          { name: 'x', ready: null, restartCount: 3, state: null, lastState: {} },
          {
            name: 'y',
            restartCount: 0,
            state: { waiting: {}, running: { startedAt: null }, terminated: null },
            lastState: { terminated: { exitCode: 0, reason: null, finishedAt: 'f' } },
          },
        ],
      },
    },
  ];

  it('writes what writing the Pod that parsePod keeps would, byte for byte', () => {
    for (const [index, wire] of wires.entries()) {
      expect(conformsToPodWire(wire), `case ${index}`).toBe(true);
      const pod = parsePod(wire);
      const encoded = readPodValue(wire);
      expect(written(encoded.json), `case ${index}`).toBe(stringified(pod));
      expect(encoded.metadata, `case ${index}`).toEqual({
        name: pod.metadata.name,
        namespace: pod.metadata.namespace,
        uid: pod.metadata.uid,
        ...(pod.metadata.resourceVersion === undefined
          ? {}
          : { resourceVersion: pod.metadata.resourceVersion }),
      });
    }
  });

  it('cuts a long annotation as parsePod does, and leaves the caller’s value as it was', () => {
    const long = 'x'.repeat(MAX_CACHED_ANNOTATION_LENGTH + 7);
    const wire = { metadata: { name: 'p', uid: 'u', annotations: { long } } };
    const read = JSON.parse(written(readPodValue(wire).json)) as Pod;
    expect(read.metadata.annotations.long).toMatch(/… \(7 more characters\)$/);
    expect(wire.metadata.annotations.long).toBe(long);
  });

  it('still refuses what parsePod refuses', () => {
    expect(() => readPodValue({ metadata: { name: 'no-uid' } })).toThrow(/malformed pod/);
  });
});
