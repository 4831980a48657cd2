import { describe, expect, it } from 'vitest';
import {
  decodeUtf8,
  expectWireType,
  ProtobufDecodeError,
  ProtobufReader,
  WIRE_FIXED32,
  WIRE_FIXED64,
  WIRE_LENGTH_DELIMITED,
  WIRE_VARINT,
  WireCursor,
} from '../../src/kubernetes/codec/protobuf-reader.js';
import {
  concatBytes,
  encodeTag,
  encodeVarint,
  message,
  WIRE_END_GROUP,
  WIRE_START_GROUP,
} from '../support/protobuf-writer.js';

const reader = (bytes: readonly number[] | Uint8Array) =>
  new ProtobufReader(Uint8Array.from(bytes));

/** A message holding one string field (field 1) whose bytes are `bytes`. */
const stringField = (bytes: readonly number[] | Uint8Array) =>
  reader(message((w) => w.bytes(1, bytes)));

/** Reads the one string field of `stringField`. */
function readString(bytes: readonly number[] | Uint8Array): string {
  const r = stringField(bytes);
  expect(r.tag()).toEqual([1, WIRE_LENGTH_DELIMITED]);
  return r.string();
}

describe('the test writer (test/support/protobuf-writer.ts) encodes as protobuf documents', () => {
  it.each<[number | bigint, number[]]>([
    [0, [0x00]],
    [1, [0x01]],
    [150, [0x96, 0x01]],
    [300, [0xac, 0x02]],
    [0xffff_ffff, [0xff, 0xff, 0xff, 0xff, 0x0f]],
    [-1, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
    [-2147483648, [0x80, 0x80, 0x80, 0x80, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01]],
  ])('varint %s', (value, bytes) => {
    expect([...encodeVarint(value)]).toEqual(bytes);
  });

  it('tags as field << 3 | wire type', () => {
    expect([...encodeTag(1, WIRE_VARINT)]).toEqual([0x08]);
    expect([...encodeTag(2, WIRE_LENGTH_DELIMITED)]).toEqual([0x12]);
    expect([...encodeTag(38, WIRE_LENGTH_DELIMITED)]).toEqual([0xb2, 0x02]);
  });
});

describe('ProtobufReader varints', () => {
  // One value per encoded length, from one byte to ten.
  it.each<[string, bigint]>([
    ['1 byte', 127n],
    ['2 bytes', 128n],
    ['3 bytes', 2n ** 14n + 1n],
    ['4 bytes', 2n ** 21n + 3n],
    ['5 bytes', 2n ** 28n + 5n],
    ['6 bytes', 2n ** 35n + 7n],
    ['7 bytes', 2n ** 42n + 11n],
    ['8 bytes', 2n ** 49n + 13n],
    ['8 bytes, the largest exact double', 2n ** 53n - 1n],
  ])('reads an unsigned varint of %s', (label, value) => {
    const bytes = encodeVarint(value);
    expect(bytes.length).toBe(Number(label.split(' ')[0]));
    const r = reader(bytes);
    expect(r.uint()).toBe(Number(value));
    expect(r.more()).toBe(false);
    expect(reader(bytes).int64()).toBe(Number(value));
  });

  it('reads the largest uint32 (five bytes) as a count, and as int32 -1 (its low 32 bits)', () => {
    const bytes = [0xff, 0xff, 0xff, 0xff, 0x0f];
    expect(reader(bytes).uint()).toBe(4_294_967_295);
    expect(reader(bytes).int32()).toBe(-1);
    expect(reader(bytes).int64()).toBe(4_294_967_295);
  });

  it('reads the largest int32', () => {
    expect(reader(encodeVarint(2_147_483_647)).int32()).toBe(2_147_483_647);
  });

  it('reads negative int32s sign-extended to ten bytes: -1 and -2147483648', () => {
    const minusOne = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    const r = reader(minusOne);
    expect(r.int32()).toBe(-1);
    expect(r.more()).toBe(false);
    const min = [0x80, 0x80, 0x80, 0x80, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01];
    expect(reader(min).int32()).toBe(-2_147_483_648);
    expect(reader(encodeVarint(-137)).int32()).toBe(-137);
  });

  it.each([-1, -2, -2_147_483_648, -4_294_967_296, -1_234_567_890_123, -(2 ** 53) + 1])(
    'reads the negative int64 %d',
    (value) => {
      const bytes = encodeVarint(value);
      expect(bytes.length).toBe(10);
      expect(reader(bytes).int64()).toBe(value);
    },
  );

  it('reads the largest int64 as the nearest double', () => {
    expect(reader(encodeVarint(2n ** 63n - 1n)).int64()).toBe(2 ** 63);
  });

  it('reads bools: zero is false, anything else true', () => {
    expect(reader([0x00]).bool()).toBe(false);
    expect(reader([0x01]).bool()).toBe(true);
    expect(reader(encodeVarint(2n ** 40n)).bool()).toBe(true);
  });

  it('rejects a varint longer than ten bytes', () => {
    const eleven = [...Array(10).fill(0xff), 0x01];
    expect(() => reader(eleven).int64()).toThrow(ProtobufDecodeError);
    expect(() => reader(eleven).int64()).toThrow('varint longer than ten bytes');
  });

  it('rejects a varint that runs past its message', () => {
    expect(() => reader([0x80, 0x80]).uint()).toThrow(ProtobufDecodeError);
    expect(() => reader([]).uint()).toThrow('varint runs past its message');
    // The message ends before its buffer does: the bytes beyond are not the message's.
    const bounded = new ProtobufReader(Uint8Array.from([0x80, 0x01]), 0, 1);
    expect(() => bounded.uint()).toThrow(ProtobufDecodeError);
  });

  it('rejects a count of 2^53 or more', () => {
    expect(() => reader(encodeVarint(2n ** 53n)).uint()).toThrow('varint too large for a length');
    expect(() => reader(encodeVarint(-1)).uint()).toThrow(ProtobufDecodeError);
  });
});

describe('ProtobufReader tags', () => {
  it.each<[number, number]>([
    [1, WIRE_VARINT],
    [2, WIRE_LENGTH_DELIMITED],
    [15, WIRE_FIXED64],
    [16, WIRE_FIXED32],
    [38, WIRE_LENGTH_DELIMITED],
    [2047, WIRE_VARINT],
    [536_870_911, WIRE_FIXED32],
  ])('reads field %d with wire type %d', (field, wire) => {
    const r = reader(encodeTag(field, wire));
    expect(r.tag()).toEqual([field, wire]);
    expect(r.more()).toBe(false);
  });

  it('rejects field number 0, whatever its wire type', () => {
    expect(() => reader([0x00]).tag()).toThrow(ProtobufDecodeError);
    expect(() => reader([0x02]).tag()).toThrow('field number 0');
    expect(() => reader([0x05]).tag()).toThrow('field number 0');
  });

  it('checks a wire type against the schema with expectWireType()', () => {
    expect(() => expectWireType(WIRE_LENGTH_DELIMITED, WIRE_LENGTH_DELIMITED, 'raw')).not.toThrow();
    expect(() => expectWireType(WIRE_VARINT, WIRE_LENGTH_DELIMITED, 'raw')).toThrow(
      'raw has wire type 0, expected 2',
    );
  });
});

describe('WireCursor.stepOver: a walk that keeps offsets', () => {
  it('leaves the field between spanStart and at, and goes no further than its end', () => {
    const cursor = new WireCursor();
    cursor.bytes = Uint8Array.from([0xff, 0x03, 0x61, 0x62, 0x63, 0x00, 0x08]);
    cursor.at = 1;
    cursor.stepOver(7);
    expect([cursor.spanStart, cursor.at]).toEqual([2, 5]);
    cursor.stepOver(7);
    expect([cursor.spanStart, cursor.at]).toEqual([6, 6]);
  });

  it('refuses a length that runs past the end it is given', () => {
    const cursor = new WireCursor();
    cursor.bytes = Uint8Array.from([0x03, 0x61, 0x62, 0x63]);
    expect(() => cursor.stepOver(3)).toThrow('length-delimited field runs past its message');
  });
});

describe('ProtobufReader length-delimited fields', () => {
  it('gives the bounds of a span and moves past it', () => {
    const r = reader([0x03, 0x61, 0x62, 0x63, 0x08]);
    expect(r.span()).toEqual([1, 4]);
    expect(r.position).toBe(4);
    expect(r.more()).toBe(true);
  });

  it('reads an empty span', () => {
    const r = reader([0x00]);
    expect(r.span()).toEqual([1, 1]);
    expect(r.more()).toBe(false);
  });

  it('rejects a span that runs past its message, even when the buffer has the bytes', () => {
    expect(() => reader([0x04, 0x61, 0x62, 0x63]).span()).toThrow(
      'length-delimited field runs past its message',
    );
    const bytes = Uint8Array.from([0x02, 0x61, 0x62, 0x63]);
    expect(() => new ProtobufReader(bytes, 0, 2).span()).toThrow(ProtobufDecodeError);
    expect(new ProtobufReader(bytes, 0, 3).span()).toEqual([1, 3]);
  });

  it('rejects a span whose length is absurd', () => {
    expect(() => reader([...encodeVarint(2n ** 52n), 0x00]).span()).toThrow(ProtobufDecodeError);
    expect(() => reader(encodeVarint(-1)).span()).toThrow(ProtobufDecodeError);
  });

  it('opens a nested message bounded by its length', () => {
    const bytes = message((w) => w.message(1, (inner) => inner.varint(1, 7)).varint(2, 9));
    const r = new ProtobufReader(bytes);
    expect(r.tag()).toEqual([1, WIRE_LENGTH_DELIMITED]);
    const inner = r.message();
    expect(inner.tag()).toEqual([1, WIRE_VARINT]);
    expect(inner.int32()).toBe(7);
    expect(inner.more()).toBe(false);
    expect(r.tag()).toEqual([2, WIRE_VARINT]);
    expect(r.int32()).toBe(9);
  });

  it('refuses bounds outside its buffer', () => {
    const bytes = new Uint8Array(4);
    expect(() => new ProtobufReader(bytes, 0, 5)).toThrow(ProtobufDecodeError);
    expect(() => new ProtobufReader(bytes, -1, 2)).toThrow('message bounds outside its buffer');
    expect(() => new ProtobufReader(bytes, 3, 2)).toThrow(ProtobufDecodeError);
    expect(new ProtobufReader(bytes, 4, 4).more()).toBe(false);
  });
});

describe('ProtobufReader skip', () => {
  it('skips a field of every wire type, leaving the cursor on the next field', () => {
    const bytes = message((w) =>
      w
        .varint(1, 300)
        .varint(2, -1)
        .fixed64(3, 0xffff_ffff_ffff_ffffn)
        .bytes(4, [0x08, 0x96, 0x01])
        .fixed32(5, 0xffff_ffff)
        .string(6, 'after'),
    );
    const r = new ProtobufReader(bytes);
    const seen: number[] = [];
    for (;;) {
      const [field, wire] = r.tag();
      seen.push(wire);
      if (field === 6) break;
      r.skip(wire);
    }
    expect(seen).toEqual([
      WIRE_VARINT,
      WIRE_VARINT,
      WIRE_FIXED64,
      WIRE_LENGTH_DELIMITED,
      WIRE_FIXED32,
      WIRE_LENGTH_DELIMITED,
    ]);
    expect(r.string()).toBe('after');
    expect(r.more()).toBe(false);
  });

  it.each([
    ['a fixed64', WIRE_FIXED64, [1, 2, 3, 4, 5, 6, 7]],
    ['a fixed32', WIRE_FIXED32, [1, 2, 3]],
    ['a length-delimited field', WIRE_LENGTH_DELIMITED, [0x05, 1, 2]],
    ['a varint', WIRE_VARINT, [0x80]],
  ])('rejects %s that runs past its message', (_, wire, bytes) => {
    expect(() => reader(bytes).skip(wire)).toThrow(ProtobufDecodeError);
  });

  it.each([WIRE_START_GROUP, WIRE_END_GROUP, 6, 7])('rejects wire type %d', (wire) => {
    const r = reader(concatBytes(encodeTag(9, wire), Uint8Array.from([0x00])));
    const [field, wireType] = r.tag();
    expect([field, wireType]).toEqual([9, wire]);
    expect(() => r.skip(wireType)).toThrow(ProtobufDecodeError);
    expect(() => reader([]).skip(wire)).toThrow(`unsupported wire type ${wire}`);
  });
});

describe('ProtobufReader strings', () => {
  it('reads short ASCII, including the empty string', () => {
    expect(readString(new TextEncoder().encode('Running'))).toBe('Running');
    expect(readString([])).toBe('');
  });

  it('reads ASCII on both sides of the 32-byte fast path', () => {
    for (const length of [31, 32, 33, 200, 70_000]) {
      const text = 'abcdefghijklmnopqrstuvwxyz0123456789-./'.repeat(2000).slice(0, length);
      expect(readString(new TextEncoder().encode(text))).toBe(text);
    }
  });

  it('reads non-ASCII UTF-8, short and long', () => {
    for (const text of ['é', 'héllo ✓', '日本語', '🚀', `${'x'.repeat(31)}é`, 'ǅ'.repeat(40)]) {
      expect(readString(new TextEncoder().encode(text))).toBe(text);
    }
  });

  it('replaces invalid UTF-8 with U+FFFD, short and long', () => {
    expect(readString([0x41, 0xff, 0x42])).toBe('A\uFFFDB');
    expect(readString([0xc3])).toBe('\uFFFD');
    const long = [...new TextEncoder().encode('y'.repeat(40)), 0xff, 0x7a];
    expect(readString(long)).toBe(`${'y'.repeat(40)}\uFFFDz`);
  });

  it('keeps a leading byte-order mark, as Go does (it is text, not a file header)', () => {
    expect(readString([0xef, 0xbb, 0xbf, 0x41])).toBe('\uFEFFA');
    const long = [0xef, 0xbb, 0xbf, ...new TextEncoder().encode('z'.repeat(40))];
    expect(readString(long)).toBe(`\uFEFF${'z'.repeat(40)}`);
  });

  it('reads every ASCII length up to past the interned ones from inside views that do not start their buffer', () => {
    const text = 'abcdefghijklmnopqrstuvwxyz0123456789-./ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const backing = new TextEncoder().encode(`~~~~${text}${text}~~~~`);
    // A view at an offset into its ArrayBuffer (as a frame inside a socket chunk is), plain and Buffer.
    const views = [backing.subarray(3), Buffer.from(backing.buffer, 3)];
    for (const view of views) {
      for (let length = 1; length <= 60; length += 1) {
        // Twice: the second read of a string may come from the intern table.
        for (let read = 0; read < 2; read += 1) {
          expect(decodeUtf8(view, 1 + length, 1 + 2 * length)).toBe(
            `${text}${text}`.slice(length, 2 * length),
          );
        }
      }
    }
  });

  it('decodes only its range of a larger buffer', () => {
    const bytes = new TextEncoder().encode('xxhéllo✓yy');
    expect(decodeUtf8(bytes, 2, bytes.length - 2)).toBe('héllo✓');
    expect(decodeUtf8(bytes, 0, 2)).toBe('xx');
  });

  it('rejects a string that runs past its message', () => {
    expect(() => reader([0x05, 0x61]).string()).toThrow(ProtobufDecodeError);
  });
});
