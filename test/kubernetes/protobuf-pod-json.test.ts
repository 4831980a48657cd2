import { describe, expect, it } from 'vitest';
import { EncodedPod, POD_JSON } from '../../src/kubernetes/codec/encoded-pod.js';
import { JsonBuffer, writePodsJson } from '../../src/kubernetes/codec/pod-json-writer.js';
import {
  decodeProtobufPod,
  decodeProtobufPodPage,
  decodeProtobufPodWatchEvent,
} from '../../src/kubernetes/codec/protobuf-pod-decoder.js';
import { transcodeProtobufPod } from '../../src/kubernetes/codec/protobuf-pod-json.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { MalformedPodError, type Pod } from '../../src/model/pod.js';
import { AWKWARD_STRINGS } from '../support/awkward-strings.js';
import { barePod, fullPod, type Json, page, pod } from '../support/protobuf-pods.js';
import {
  type BuildOptions,
  encodePodMessage,
  encodeWatchEvent,
} from '../support/protobuf-writer.js';

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** The transcoder's JSON for a Pod message, or undefined. */
function transcoded(message: Uint8Array): string | undefined {
  const out = new JsonBuffer();
  const identity = transcodeProtobufPod(message, 0, message.length, out);
  return identity ? text(out.bytes.subarray(0, out.length)) : undefined;
}

/** What the main thread parsed before: the decoder's `Pod`, written by the hop's writer. */
function reference(message: Uint8Array): Pod | undefined {
  const decoded = decodeProtobufPod(message);
  return decoded && (JSON.parse(text(writePodsJson([decoded])))[0] as Pod);
}

/** Equal as the main thread sees them: the parsed objects, key order included. */
function expectSameParse(message: Uint8Array): void {
  const json = transcoded(message);
  const expected = reference(message);
  expect(json).toBeDefined();
  const parsed = JSON.parse(json as string);
  expect(parsed).toStrictEqual(expected);
  expect(JSON.stringify(parsed)).toBe(JSON.stringify(expected));
}

const AWKWARD = AWKWARD_STRINGS;

/** A pod whose every kept string is `value`, and whose numbers are extreme. */
function awkwardPod(value: string, index: number): Json {
  const json = fullPod(`p-${index}`) as {
    metadata: Json;
    spec: { containers: Array<Json & { ports: Json[] }> };
    status: Json;
  };
  json.metadata.labels = { [value]: value, plain: value, '7': 'numeric key' };
  json.metadata.annotations = { [value]: value.repeat(200) };
  json.metadata.ownerReferences = [{ kind: value, name: value, uid: value, controller: true }];
  json.spec.containers[0] = {
    name: value,
    ports: [{ name: value, containerPort: -2147483648, protocol: value }],
  };
  json.status.phase = value;
  json.status.conditions = [
    { type: value, status: value, reason: value, message: value, lastTransitionTime: null },
  ];
  return json;
}

describe('transcodeProtobufPod: a Pod message straight to the hop JSON', () => {
  it.each<[string, BuildOptions]>([
    ['as the API server writes them', {}],
    ['with only the fields set', { style: 'sparse' }],
    ['with fields in descending order', { order: 'descending' }],
    ['with unknown fields in every message', { unknownFields: true }],
  ])('parses to the pod the decoder builds, key order included, %s', (_, options) => {
    for (const json of [fullPod('a'), barePod('b')])
      expectSameParse(encodePodMessage(json, options));
  });

  it.each(AWKWARD.map((value, index) => [JSON.stringify(value), value, index] as const))(
    'writes the string %s as the decoder reads it',
    (_, value, index) => {
      for (const style of ['gogo', 'sparse'] as const) {
        expectSameParse(encodePodMessage(awkwardPod(value, index), { style }));
      }
    },
  );

  it('reads invalid UTF-8 as the decoder does, with U+FFFD', () => {
    const message = encodePodMessage(barePod('p'));
    // The pod name's bytes are "p": replace it with a lone continuation byte.
    const at = message.indexOf(0x70);
    const broken = message.slice();
    broken[at] = 0x80;
    expectSameParse(broken);
    expect(transcoded(broken)).toContain('\ufffd');
  });

  it('cuts an over-long annotation as the schema does, by characters, not bytes', () => {
    const json = barePod('p') as { metadata: Json };
    json.metadata.annotations = { long: '✓'.repeat(1_000), longer: 'x'.repeat(1_100) };
    expectSameParse(encodePodMessage(json));
    expect(transcoded(encodePodMessage(json))).toMatch(/… \(76 more characters\)/);
  });

  it('answers its identity: the key and the cursor, as strings', () => {
    const message = encodePodMessage(fullPod('a'));
    const out = new JsonBuffer();
    expect(transcodeProtobufPod(message, 0, message.length, out)).toStrictEqual({
      name: 'a',
      namespace: 'pools',
      uid: 'uid-a',
      resourceVersion: '42',
    });
  });

  it('answers undefined for a pod the schema rejects, and leaves what was written alone', () => {
    const out = new JsonBuffer();
    const first = encodePodMessage(barePod('a'));
    transcodeProtobufPod(first, 0, first.length, out);
    const before = text(out.bytes.subarray(0, out.length));
    for (const broken of [
      { metadata: { uid: 'u' } },
      { metadata: { name: 'no-uid' } },
      { metadata: { name: '', uid: 'u' } },
    ]) {
      const message = encodePodMessage(broken);
      expect(transcodeProtobufPod(message, 0, message.length, out)).toBeUndefined();
      expect(text(out.bytes.subarray(0, out.length))).toBe(before);
    }
  });

  it('answers undefined, never throws, for bytes that are not protobuf', () => {
    const message = encodePodMessage(fullPod('a'));
    const out = new JsonBuffer();
    for (let cut = 1; cut < message.length; cut += 7) {
      const bytes = message.subarray(0, message.length - cut);
      let identity: unknown;
      expect(() => {
        identity = transcodeProtobufPod(bytes, 0, bytes.length, out);
      }).not.toThrow();
      // Whatever a cut message still reads as, it is what the decoder reads, or nothing.
      if (identity !== undefined) expect(reference(bytes)).toBeDefined();
    }
    expect(transcodeProtobufPod(Uint8Array.of(0xff, 0xff, 0xff), 0, 3, out)).toBeUndefined();
  });

  it('matches the decoder on random pods', () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = ['a', 'Z', '0', '"', '\\', '\n', '\u0001', 'é', '✓', '🚀', '/', '.', '-'];
    const word = (): string => {
      let value = '';
      const length = Math.floor(random() * 12);
      for (let index = 0; index < length; index += 1)
        value += alphabet[Math.floor(random() * alphabet.length)];
      return value;
    };
    for (let round = 0; round < 200; round += 1) {
      const json = awkwardPod(word(), round) as { metadata: Json };
      json.metadata.labels = Object.fromEntries(
        Array.from({ length: Math.floor(random() * 5) }, () => [word(), word()]),
      );
      const style = random() < 0.5 ? 'gogo' : 'sparse';
      const order = random() < 0.5 ? 'ascending' : 'descending';
      expectSameParse(encodePodMessage(json, { style, order, unknownFields: random() < 0.3 }));
    }
  });
});

describe('POD_JSON: pods as the worker holds them', () => {
  it('reads a LIST page into encoded pods that parse to the decoder’s pods', () => {
    const bytes = page([fullPod('a'), barePod('b'), fullPod('c')]);
    const encoded = decodeProtobufPodPage(bytes, POD_JSON);
    const decoded = decodeProtobufPodPage(bytes);
    expect(encoded?.pods.map((one) => JSON.parse(text(one.json)))).toStrictEqual(
      JSON.parse(text(writePodsJson(decoded?.pods ?? []))),
    );
    expect(encoded?.pods.map((one) => POD_JSON.key(one))).toStrictEqual([
      'pools/a',
      'b',
      'pools/c',
    ]);
    expect(encoded?.metadata).toEqual({ resourceVersion: '9', continue: 'next' });
  });

  it('reads a watch frame to the reading the decoder gives, the pod encoded', () => {
    const bytes = encodeWatchEvent({ type: 'MODIFIED', object: pod(fullPod('a')) });
    const encoded = readFrame(
      { kind: 'decoded', value: decodeProtobufPodWatchEvent(bytes, POD_JSON) },
      POD_JSON,
    );
    const decoded = readFrame({ kind: 'decoded', value: decodeProtobufPodWatchEvent(bytes) });
    expect(encoded.kind).toBe('change');
    expect(decoded.kind).toBe('change');
    if (encoded.kind !== 'change' || decoded.kind !== 'change') return;
    expect(encoded.resourceVersion).toBe(decoded.resourceVersion);
    if (encoded.event.type !== 'upsert' || decoded.event.type !== 'upsert') {
      throw new Error('expected upserts');
    }
    expect(encoded.event.key).toBe(decoded.event.key);
    expect(encoded.event.object).toBeInstanceOf(EncodedPod);
    expect(JSON.parse(text(encoded.event.object.json))).toStrictEqual(
      JSON.parse(JSON.stringify(decoded.event.object)),
    );
  });

  it('validates a JSON value with the schema, and takes an encoded pod as it is', () => {
    const fromJson = POD_JSON.fromValue(barePod('a'));
    expect(fromJson).toBeInstanceOf(EncodedPod);
    expect(POD_JSON.fromValue(fromJson)).toBe(fromJson);
    expect(() => POD_JSON.fromValue({ metadata: { name: 'no-uid' } })).toThrow(MalformedPodError);
  });

  it('answers undefined for a message that is not a readable pod', () => {
    const broken = encodePodMessage({ metadata: { name: 'no-uid' } });
    expect(POD_JSON.fromProtobuf(broken, 0, broken.length)).toBeUndefined();
    expect(POD_JSON.fromProtobuf(Uint8Array.of(0xff), 0, 1)).toBeUndefined();
  });
});
