import { describe, expect, it } from 'vitest';
import {
  EncodedPod,
  RefusedPod,
  readPodValue,
  readProtobufPod,
} from '../../src/kubernetes/codec/encoded-pod.js';
import { JsonBuffer, writePodJson } from '../../src/kubernetes/codec/pod-json-writer.js';
import {
  decodeProtobufPodList,
  decodeProtobufWatchEvent,
} from '../../src/kubernetes/codec/pod-protobuf.js';
import {
  RefusedPodError,
  transcodeProtobufPod,
} from '../../src/kubernetes/codec/protobuf-pod-json.js';
import { ProtobufDecodeError } from '../../src/kubernetes/codec/protobuf-reader.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { MalformedPodError, type Pod, parsePod, podKey } from '../../src/model/pod.js';
import { AWKWARD_STRINGS } from '../support/awkward-strings.js';
import { decodedEvent, decodedPod } from '../support/decoded-pods.js';
import { barePod, fullPod, type Json, page, pod } from '../support/protobuf-pods.js';
import {
  type BuildOptions,
  encodePodMessage,
  encodeWatchEvent,
} from '../support/protobuf-writer.js';

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** The transcoder's JSON for a Pod message (it throws for one that is not a readable pod). */
function transcoded(message: Uint8Array): string {
  const out = new JsonBuffer();
  transcodeProtobufPod(message, 0, message.length, out);
  return text(out.bytes.subarray(0, out.length));
}

/** `pod` with its maps' entries in one order: Go writes map keys sorted, the fixtures do not. */
function sortedMaps(pod: Pod): Pod {
  const sorted = (map: Record<string, string>) =>
    Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      labels: sorted(pod.metadata.labels),
      annotations: sorted(pod.metadata.annotations),
    },
    spec: { ...pod.spec, nodeSelector: sorted(pod.spec.nodeSelector) },
  };
}

/** Fields tagged `omitempty` in Go (a port's `name` among them): JSON leaves an empty one out. */
const OMITEMPTY = new Set([
  'resourceVersion',
  'nodeName',
  'subdomain',
  'phase',
  'podIP',
  'reason',
  'message',
  'protocol',
]);

/**
 * A fixture as the API server's JSON carries the same pod: text through UTF-8 (a lone surrogate
 * becomes U+FFFD, as in the protobuf bytes), empty `omitempty` strings left out.
 */
function asGoWritesIt(value: unknown, inPorts = false): unknown {
  if (typeof value === 'string') return new TextDecoder().decode(new TextEncoder().encode(value));
  if (Array.isArray(value)) return value.map((item) => asGoWritesIt(item, inPorts));
  if (typeof value !== 'object' || value === null) return value;
  const out: Json = {};
  for (const [key, field] of Object.entries(value)) {
    const omitted = OMITEMPTY.has(key) || (inPorts && key === 'name');
    if (field === '' && omitted) continue;
    out[asGoWritesIt(key) as string] = asGoWritesIt(field, inPorts || key === 'ports');
  }
  return out;
}

/**
 * Equal as the main thread sees them: the transcoded JSON of the pod in protobuf, parsed, and the
 * schema's `Pod` of the same pod in the API server's JSON, key order included (the same hidden
 * classes).
 */
function expectSameParse(json: Json, options: BuildOptions = {}): void {
  const parsed = JSON.parse(transcoded(encodePodMessage(json, options))) as Pod;
  const expected = parsePod(asGoWritesIt(json));
  expect(parsed).toStrictEqual(expected);
  expect(JSON.stringify(sortedMaps(parsed))).toBe(JSON.stringify(sortedMaps(expected)));
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
  ])('parses to the pod the schema reads from its JSON, key order included, %s', (_, options) => {
    for (const json of [fullPod('a'), barePod('b')]) expectSameParse(json, options);
  });

  it.each(AWKWARD.map((value, index) => [JSON.stringify(value), value, index] as const))(
    'writes the string %s as the schema reads it from JSON',
    (_, value, index) => {
      for (const style of ['gogo', 'sparse'] as const) {
        expectSameParse(awkwardPod(value, index), { style });
      }
    },
  );

  it('reads invalid UTF-8 as Go does, with U+FFFD', () => {
    const message = encodePodMessage(barePod('p'));
    // The pod name's bytes are "p": replace it with a lone continuation byte.
    const at = message.indexOf(0x70);
    const broken = message.slice();
    broken[at] = 0x80;
    expect(JSON.parse(transcoded(broken))).toStrictEqual(
      parsePod({ metadata: { name: '\ufffd', uid: 'uid-p' } }),
    );
  });

  it('cuts an over-long annotation as the schema does, by characters, not bytes', () => {
    const json = barePod('p') as { metadata: Json };
    json.metadata.annotations = { long: '✓'.repeat(1_000), longer: 'x'.repeat(1_100) };
    expectSameParse(json);
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

  it('refuses a pod the schema rejects, naming the field as the schema does, and leaves what was written alone', () => {
    const out = new JsonBuffer();
    const first = encodePodMessage(barePod('a'));
    transcodeProtobufPod(first, 0, first.length, out);
    const before = text(out.bytes.subarray(0, out.length));
    for (const broken of [
      { metadata: { uid: 'u' } },
      { metadata: { name: 'no-uid', resourceVersion: '8' } },
      { metadata: { name: '', uid: 'u' } },
    ]) {
      const message = encodePodMessage(broken);
      let refusal: unknown;
      try {
        transcodeProtobufPod(message, 0, message.length, out);
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(RefusedPodError);
      // The schema's words for the same pod in JSON, where protobuf's empty string is absent.
      const json = JSON.parse(JSON.stringify(broken).replaceAll('"name":"",', ''));
      expect(() => parsePod(json)).toThrow((refusal as Error).message);
      expect(text(out.bytes.subarray(0, out.length))).toBe(before);
    }
  });

  it('throws ProtobufDecodeError, saying what broke, for bytes that are not protobuf', () => {
    const message = encodePodMessage(fullPod('a'));
    const out = new JsonBuffer();
    let undecodable = 0;
    for (let cut = 1; cut < message.length; cut += 7) {
      const bytes = message.subarray(0, message.length - cut);
      try {
        transcodeProtobufPod(bytes, 0, bytes.length, out);
      } catch (error) {
        // Whatever a cut message still reads as is a pod, a refusal, or undecodable bytes.
        if (!(error instanceof RefusedPodError)) {
          expect(error).toBeInstanceOf(ProtobufDecodeError);
          undecodable += 1;
        }
      }
    }
    expect(undecodable).toBeGreaterThan(0);
    expect(out.length).toBe(0);
    expect(() => transcodeProtobufPod(Uint8Array.of(0xff, 0xff, 0xff), 0, 3, out)).toThrow(
      'varint runs past its message',
    );
  });

  it('writes escaped ASCII and times byte for byte as the writer writes the parsed pod', () => {
    // ASCII that JSON escapes, short and past the 32-byte copy loop: escaped from the bytes, no
    // string decoded in between. Times: written digit by digit.
    for (const value of ['"q"', 'a\\b\n\u0001c', `{"k":"${'v'.repeat(40)}","t":"\t"}`]) {
      const json = awkwardPod(value, 1) as { metadata: Json; status: { conditions: Json[] } };
      // Map entries keep wire order (sorted, as Go writes them); no integer key, which a
      // JavaScript object would put first.
      json.metadata.labels = Object.fromEntries([value, 'plain'].sort().map((key) => [key, value]));
      json.status.conditions = [
        { type: 'Ready', status: 'True', lastTransitionTime: '2026-12-07T05:33:53Z' },
        { type: 'Old', status: 'False', lastTransitionTime: '0001-01-01T00:00:01Z' },
      ];
      const expected = new JsonBuffer();
      writePodJson(expected, parsePod(asGoWritesIt(json)));
      expect(transcoded(encodePodMessage(json))).toBe(
        text(expected.bytes.subarray(0, expected.length)),
      );
    }
  });

  it('matches the schema on random pods', () => {
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
      expectSameParse(json, { style, order, unknownFields: random() < 0.3 });
    }
  });
});

describe('EncodedPod: pods as the reflector holds them', () => {
  it.each<[string, BuildOptions]>([
    ['as the API server writes them', {}],
    ['with only the fields set', { style: 'sparse' }],
    ['with fields in descending order', { order: 'descending' }],
    ['with unknown fields in every message', { unknownFields: true }],
  ])('reads a protobuf LIST page into the pods its JSON gives, %s', (_, options) => {
    const items = [fullPod('a'), barePod('b'), fullPod('c')];
    const read = decodeProtobufPodList(page(items, options));
    const fromJson = items.map(readPodValue);
    expect(read.pods.map(decodedPod)).toStrictEqual(fromJson.map(decodedPod));
    expect(read.pods.map(podKey)).toStrictEqual(['pools/a', 'b', 'pools/c']);
    expect(read.pods.map((one) => one.metadata)).toStrictEqual(fromJson.map((one) => one.metadata));
    expect(read.metadata).toEqual({ resourceVersion: '9', continue: 'next' });
  });

  it('voids a page with a pod the schema rejects, naming the first, and reads the rest', () => {
    for (const broken of [{ metadata: { uid: 'u' } }, { metadata: { name: 'no-uid' } }]) {
      const read = decodeProtobufPodList(page([barePod('a'), broken, barePod('c'), broken]));
      expect(read.refused?.index).toBe(1);
      expect(read.refused?.error).toBeInstanceOf(MalformedPodError);
    }
  });

  it('still fails a page that is not protobuf, whatever item came first', () => {
    const bytes = page([{ metadata: { name: 'no-uid' } }, barePod('b')]);
    expect(() => decodeProtobufPodList(bytes.subarray(0, bytes.length - 3))).toThrow(
      ProtobufDecodeError,
    );
  });

  const frames: Array<[string, { type: string; object: Json }]> = [
    ['ADDED', { type: 'ADDED', object: pod(fullPod('a')) }],
    ['MODIFIED', { type: 'MODIFIED', object: pod(barePod('b')) }],
    ['DELETED', { type: 'DELETED', object: pod(fullPod('c')) }],
    [
      'BOOKMARK',
      {
        type: 'BOOKMARK',
        object: pod({
          metadata: { resourceVersion: '77', annotations: { 'k8s.io/initial-events-end': 'true' } },
        }),
      },
    ],
    [
      'ERROR',
      { type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', code: 410, reason: 'Expired' } },
    ],
    ['a pod without a uid', { type: 'ADDED', object: pod({ metadata: { name: 'x' } }) }],
    [
      'a pod without a uid, with a version',
      { type: 'MODIFIED', object: pod({ metadata: { name: 'x', resourceVersion: '12' } }) },
    ],
    ['an object of another kind', { type: 'ADDED', object: { kind: 'Node', apiVersion: 'v1' } }],
  ];

  /** A reading with its pod parsed back, its maps in one order. */
  const comparable = (reading: ReturnType<typeof readFrame>): unknown => {
    if (reading.kind !== 'change') return reading;
    const event = decodedEvent(reading.event);
    if (event.type === 'replace') return reading;
    const pod = event.type === 'upsert' ? event.object : event.lastObject;
    return {
      ...reading,
      event: { type: event.type, key: event.key, pod: pod && sortedMaps(pod) },
    };
  };

  it.each(frames)('reads a protobuf %s frame to the reading of its JSON frame', (_, event) => {
    const fromProtobuf = readFrame({
      kind: 'decoded',
      value: decodeProtobufWatchEvent(encodeWatchEvent(event)),
    });
    const fromJson = readFrame({ kind: 'decoded', value: asGoWritesIt(event) });
    expect(comparable(fromProtobuf)).toStrictEqual(comparable(fromJson));
  });

  it('validates a JSON value with the schema, and takes an encoded pod as it is', () => {
    const fromJson = readPodValue(barePod('a'));
    expect(fromJson).toBeInstanceOf(EncodedPod);
    expect(readPodValue(fromJson)).toBe(fromJson);
    expect(() => readPodValue({ metadata: { name: 'no-uid' } })).toThrow(MalformedPodError);
  });

  it('throws the refusal of a pod protobuf gave no pod for, which keeps its version', () => {
    const broken = encodePodMessage({ metadata: { name: 'no-uid', resourceVersion: '5' } });
    let refusal: unknown;
    try {
      readProtobufPod(broken, 0, broken.length);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(RefusedPodError);
    const refused = new RefusedPod(refusal as RefusedPodError);
    expect(refused.metadata).toStrictEqual({ resourceVersion: '5' });
    expect(() => readPodValue(refused)).toThrow(refusal as Error);
    expect(() => readProtobufPod(Uint8Array.of(0xff), 0, 1)).toThrow(ProtobufDecodeError);
  });
});
