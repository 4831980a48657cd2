import { describe, expect, it } from 'vitest';
import { enginePod } from '../../bench/engine-pod.js';
import { parseWithoutManagedFields } from '../../src/kubernetes/codec/managed-fields-skip.js';
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
