import { describe, expect, it } from 'vitest';
import {
  decodeProtobufPodList,
  decodeProtobufWatchEvent,
} from '../../src/kubernetes/codec/pod-protobuf.js';
import {
  decodeProtobufPod,
  decodeProtobufPodPage,
  decodeProtobufPodWatchEvent,
  isDecodedPod,
} from '../../src/kubernetes/codec/protobuf-pod-decoder.js';
import { ProtobufDecodeError } from '../../src/kubernetes/codec/protobuf-reader.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { parsePod } from '../../src/model/pod.js';
import { barePod, fullPod, page, pod } from '../support/protobuf-pods.js';
import {
  type BuildOptions,
  encodePodMessage,
  encodeWatchEvent,
} from '../support/protobuf-writer.js';

/** What the page gave through the JSON-shaped decoder and the schema: the reference. */
function throughSchema(bytes: Uint8Array): unknown[] {
  return (decodeProtobufPodList(bytes).items as unknown[]).map(parsePod);
}

describe('decodeProtobufPodPage: pods straight from protobuf, as the schema reads them', () => {
  it.each<[string, BuildOptions]>([
    ['as the API server writes them', {}],
    ['with only the fields set', { style: 'sparse' }],
    ['with fields in descending order', { order: 'descending' }],
    ['with unknown fields in every message', { unknownFields: true }],
  ])('gives the same pods, key order included, %s', (_, options) => {
    const bytes = page([fullPod('a'), barePod('b'), fullPod('c')], options);
    const decoded = decodeProtobufPodPage(bytes);
    const expected = throughSchema(bytes);
    expect(decoded?.pods).toStrictEqual(expected);
    // Same key order as the schema's shape: the main thread's pods keep one hidden class.
    expect(JSON.stringify(decoded?.pods)).toBe(JSON.stringify(expected));
    expect(decoded?.metadata).toEqual({ resourceVersion: '9', continue: 'next' });
  });

  it('cuts an over-long annotation as the schema does', () => {
    const pod = decodeProtobufPodPage(page([fullPod('a')]))?.pods[0];
    expect(pod?.metadata.annotations.long).toMatch(/… \(10 more characters\)$/);
  });

  it('marks the pods it built, and only those, as already validated', () => {
    const pod = decodeProtobufPodPage(page([barePod('a')]))?.pods[0];
    expect(isDecodedPod(pod)).toBe(true);
    expect(isDecodedPod(parsePod(barePod('a')))).toBe(false);
    expect(isDecodedPod(undefined)).toBe(false);
  });

  it('answers undefined for a page with a pod the schema rejects, so the caller reads it the old way', () => {
    for (const broken of [
      { metadata: { uid: 'u' } },
      { metadata: { name: 'no-uid' } },
      { metadata: { name: '', uid: 'u' } },
    ]) {
      expect(decodeProtobufPodPage(page([barePod('a'), broken, barePod('c')]))).toBeUndefined();
      expect(decodeProtobufPod(encodePodMessage(broken))).toBeUndefined();
    }
  });

  it('still fails a page that is not protobuf, as the old decoder does', () => {
    const bytes = page([barePod('a'), barePod('b')]);
    const cut = bytes.subarray(0, bytes.length - 3);
    expect(() => decodeProtobufPodPage(cut)).toThrow(ProtobufDecodeError);
    expect(() => decodeProtobufPodList(cut)).toThrow(ProtobufDecodeError);
  });
});

describe('decodeProtobufPodWatchEvent, then readFrame: as the JSON-shaped frame reads', () => {
  const frames: Array<[string, Uint8Array]> = [
    ['ADDED', encodeWatchEvent({ type: 'ADDED', object: pod(fullPod('a')) })],
    ['MODIFIED', encodeWatchEvent({ type: 'MODIFIED', object: pod(barePod('b')) })],
    ['DELETED', encodeWatchEvent({ type: 'DELETED', object: pod(fullPod('c')) })],
    [
      'BOOKMARK',
      encodeWatchEvent({
        type: 'BOOKMARK',
        object: pod({
          metadata: { resourceVersion: '77', annotations: { 'k8s.io/initial-events-end': 'true' } },
        }),
      }),
    ],
    [
      'ERROR',
      encodeWatchEvent({
        type: 'ERROR',
        object: { kind: 'Status', apiVersion: 'v1', code: 410, reason: 'Expired' },
      }),
    ],
    [
      'a pod without a uid',
      encodeWatchEvent({ type: 'ADDED', object: pod({ metadata: { name: 'x' } }) }),
    ],
    [
      'an object of another kind',
      encodeWatchEvent({ type: 'ADDED', object: { kind: 'Node', apiVersion: 'v1', metadata: {} } }),
    ],
  ];

  it.each(frames)('reads %s frames to the same reading', (_, bytes) => {
    const fast = readFrame({ kind: 'decoded', value: decodeProtobufPodWatchEvent(bytes) });
    const reference = readFrame({ kind: 'decoded', value: decodeProtobufWatchEvent(bytes) });
    expect(fast).toStrictEqual(reference);
  });
});
