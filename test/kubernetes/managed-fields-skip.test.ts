import { describe, expect, it } from 'vitest';
import { enginePod } from '../../bench/engine-pod.js';
import {
  parseListWithoutManagedFields,
  parseWithoutManagedFields,
} from '../../src/kubernetes/codec/managed-fields-skip.js';
import type { WatchFrame } from '../../src/kubernetes/codec/watch-framing.js';
import { jsonWatchFramer } from '../../src/kubernetes/codec/watch-line-splitter.js';

const managedFields = [
  {
    manager: 'kubelet',
    operation: 'Update',
    apiVersion: 'v1',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {} } } } },
    subresource: 'status',
  },
];

function line(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}

function podFrame(metadata: Record<string, unknown>, rest: Record<string, unknown> = {}): unknown {
  return { type: 'MODIFIED', object: { kind: 'Pod', metadata, ...rest } };
}

describe('parsing a watch line without its managedFields', () => {
  it('reads every other field of an engine pod exactly as JSON.parse does', () => {
    const pod = enginePod(7, 42) as { metadata: Record<string, unknown> };
    expect(pod.metadata.managedFields).toEqual(expect.any(Array));
    const frame = { type: 'MODIFIED', object: { kind: 'Pod', apiVersion: 'v1', ...pod } };
    const parsed = parseWithoutManagedFields(line(frame));
    const expected = structuredClone(frame);
    expected.object.metadata.managedFields = 0;
    expect(parsed).toEqual(expected);
  });

  it('skips a managedFields whose strings hold brackets, quotes and escapes', () => {
    const tricky = [{ manager: 'a]}"\\', fieldsV1: { 'f:x': { '[{': {} } } }];
    const frame = podFrame({ name: 'p', managedFields: tricky, uid: 'u' }, { spec: { n: 1 } });
    expect(parseWithoutManagedFields(line(frame))).toEqual(
      podFrame({ name: 'p', managedFields: 0, uid: 'u' }, { spec: { n: 1 } }),
    );
  });

  it('leaves a key of that name outside the metadata as it is', () => {
    const frame = {
      type: 'MODIFIED',
      object: { extra: { managedFields: [1, 2] }, metadata: { name: 'p', managedFields } },
    };
    expect(parseWithoutManagedFields(line(frame))).toEqual(frame);
  });

  it('leaves the pattern alone inside a string', () => {
    const frame = podFrame({
      name: 'p',
      annotations: { 'x"managedFields': '[1]', note: '"managedFields":[1]' },
    });
    expect(parseWithoutManagedFields(line(frame))).toEqual(frame);
  });

  it('parses a line without managedFields, or with none in the metadata, as it is', () => {
    const without = podFrame({ name: 'p' });
    expect(parseWithoutManagedFields(line(without))).toEqual(without);
    const nulled = podFrame({ name: 'p', managedFields: null });
    expect(parseWithoutManagedFields(line(nulled))).toEqual(nulled);
  });

  it("throws JSON.parse's own error for a line that is not JSON", () => {
    const broken = Buffer.from('{"object":{"metadata":{"managedFields":[{"a":1}],"name":}}}');
    expect(() => parseWithoutManagedFields(broken)).toThrow(
      (() => {
        try {
          JSON.parse(broken.toString());
        } catch (error) {
          return (error as Error).message;
        }
        return 'unreachable';
      })(),
    );
    const unterminated = Buffer.from('{"object":{"metadata":{"managedFields":[{"a":1}');
    expect(() => parseWithoutManagedFields(unterminated)).toThrow(SyntaxError);
  });

  it('is what the JSON watch framer decodes each line with', () => {
    const frames: WatchFrame[] = [];
    const framer = jsonWatchFramer();
    framer.push(
      Buffer.from(`${JSON.stringify(podFrame({ name: 'p', managedFields }))}\n \n`),
      frames,
    );
    expect(frames).toEqual([{ kind: 'decoded', value: podFrame({ name: 'p', managedFields: 0 }) }]);
  });
});

describe("parsing a LIST body without its items' managedFields", () => {
  function podList(items: unknown[]): unknown {
    return { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '9' }, items };
  }
  const pod = (name: string, fields: unknown): unknown => ({
    metadata: { name, managedFields: fields },
    spec: { nodeName: 'n' },
  });

  it('reads every item with its managedFields as 0 and all else as JSON.parse does', () => {
    const body = line(podList([pod('a', managedFields), pod('b', managedFields), pod('c', [])]));
    expect(parseListWithoutManagedFields(body)).toEqual(
      podList([pod('a', 0), pod('b', 0), pod('c', 0)]),
    );
  });

  it("parses the body as it is when one cut is not in an item's metadata", () => {
    const list = podList([
      pod('a', managedFields),
      { metadata: { name: 'b' }, spec: { managedFields: [1] } },
    ]);
    expect(parseListWithoutManagedFields(line(list))).toEqual(list);
  });

  it('parses a body without managedFields, or an items-less one, as it is', () => {
    const plain = podList([{ metadata: { name: 'a' } }]);
    expect(parseListWithoutManagedFields(line(plain))).toEqual(plain);
    const status = { kind: 'Status', details: { managedFields: [1] } };
    expect(parseListWithoutManagedFields(line(status))).toEqual(status);
  });

  it("throws JSON.parse's own error for a body that is not JSON", () => {
    const broken = Buffer.from('{"items":[{"metadata":{"managedFields":[{}]}}],}');
    let expected = '';
    try {
      JSON.parse(broken.toString());
    } catch (error) {
      expected = (error as Error).message;
    }
    expect(() => parseListWithoutManagedFields(broken)).toThrow(expected);
  });
});
