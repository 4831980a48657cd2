/**
 * A reader for the protobuf wire format (varints, fixed widths, length-delimited fields), just
 * enough to walk the messages the API server sends and skip what we do not read.
 *
 * Hand-written rather than a protobuf runtime plus generated core/v1 classes: the reflector reads
 * about twenty fields of a Pod and must skip the rest (`managedFields`, container specs: most of
 * the bytes) without building objects for them, which a generated decoder does not do. Every read
 * is bounds-checked; a message that runs past its end is a `ProtobufDecodeError`, never a read
 * outside the buffer.
 */

/** The bytes are not the protobuf message they claim to be. Its message never quotes them. */
export class ProtobufDecodeError extends Error {
  override readonly name = 'ProtobufDecodeError';
}

/** Wire types (the low three bits of a field's tag). */
export const WIRE_VARINT = 0;
/** A 64-bit fixed-width field (`fixed64`, `double`): eight bytes, skipped by the Pod reader. */
export const WIRE_FIXED64 = 1;
/**
 * A varint length, then that many bytes: strings, bytes, nested messages and packed repeated
 * fields.
 */
export const WIRE_LENGTH_DELIMITED = 2;
/** A 32-bit fixed-width field (`fixed32`, `float`): four bytes, skipped by the Pod reader. */
export const WIRE_FIXED32 = 5;

const TWO_POW_32 = 2 ** 32;

/** A cursor over one message's bytes, `[position, end)` of `bytes`. */
export class ProtobufReader {
  readonly bytes: Uint8Array;
  position: number;
  readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    if (start < 0 || end > bytes.length || start > end) {
      throw new ProtobufDecodeError('message bounds outside its buffer');
    }
    this.bytes = bytes;
    this.position = start;
    this.end = end;
  }

  /** True while fields remain. */
  more(): boolean {
    return this.position < this.end;
  }

  /**
   * The next varint as `[low 32 bits, high 32 bits]`, both unsigned: 64-bit values (negative
   * int32s are sign-extended to ten bytes on the wire) do not fit a double exactly.
   */
  #varint64(): [number, number] {
    let low = 0;
    let high = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.position >= this.end) throw new ProtobufDecodeError('varint runs past its message');
      const byte = this.bytes[this.position++] as number;
      const bits = byte & 0x7f;
      if (shift < 28) {
        low |= bits << shift;
      } else if (shift === 28) {
        low |= (bits & 0x0f) << 28;
        high |= bits >>> 4;
      } else {
        high |= bits << (shift - 32);
      }
      if ((byte & 0x80) === 0) return [low >>> 0, high >>> 0];
    }
    throw new ProtobufDecodeError('varint longer than ten bytes');
  }

  /** A varint read as an unsigned count (tags, lengths): must fit 2^53. */
  uint(): number {
    const [low, high] = this.#varint64();
    if (high >= 2 ** 21) throw new ProtobufDecodeError('varint too large for a length');
    return high * TWO_POW_32 + low;
  }

  /** An `int32` field: the low 32 bits, two's complement. */
  int32(): number {
    return this.#varint64()[0] | 0;
  }

  /** An `int64` field as a number (exact within ±2^53, which every count and time here is). */
  int64(): number {
    const [low, high] = this.#varint64();
    return high >= 0x80000000 ? (high - TWO_POW_32) * TWO_POW_32 + low : high * TWO_POW_32 + low;
  }

  bool(): boolean {
    const [low, high] = this.#varint64();
    return low !== 0 || high !== 0;
  }

  /** The next field's tag: `[field number, wire type]`. */
  tag(): [number, number] {
    const tag = this.uint();
    const field = Math.floor(tag / 8);
    if (field === 0) throw new ProtobufDecodeError('field number 0');
    return [field, tag & 7];
  }

  /** A length-delimited field's bounds, `[start, end)`, with the cursor moved past it. */
  span(): [number, number] {
    const length = this.uint();
    const start = this.position;
    if (length > this.end - start) {
      throw new ProtobufDecodeError('length-delimited field runs past its message');
    }
    this.position = start + length;
    return [start, start + length];
  }

  /** A length-delimited field as a reader of its own. */
  message(): ProtobufReader {
    const [start, end] = this.span();
    return new ProtobufReader(this.bytes, start, end);
  }

  /** A `string` field, decoded as UTF-8 (invalid sequences become U+FFFD, as Go's JSON does). */
  string(): string {
    const [start, end] = this.span();
    return decodeUtf8(this.bytes, start, end);
  }

  /** Skips one field of `wireType` (groups, long gone from proto3 and never sent here, fail). */
  skip(wireType: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.#varint64();
        return;
      case WIRE_FIXED64:
        this.#advance(8);
        return;
      case WIRE_LENGTH_DELIMITED:
        this.span();
        return;
      case WIRE_FIXED32:
        this.#advance(4);
        return;
      default:
        throw new ProtobufDecodeError(`unsupported wire type ${wireType}`);
    }
  }

  /** Checks that a field has the wire type its schema gives it. */
  expect(wireType: number, expected: number, field: string): void {
    if (wireType !== expected) {
      throw new ProtobufDecodeError(`${field} has wire type ${wireType}, expected ${expected}`);
    }
  }

  #advance(count: number): void {
    if (count > this.end - this.position) {
      throw new ProtobufDecodeError('fixed-width field runs past its message');
    }
    this.position += count;
  }
}

/** `ignoreBOM`: a leading U+FEFF is text (Go's JSON keeps it), not a byte-order mark to drop. */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** Slots of the short-string table: a power of two, a few dozen KiB of references. */
const INTERN_SLOTS = 4_096;
/** The longest string the table keeps: names, label keys and values, phases, condition types. */
const INTERN_MAX_BYTES = 48;
const internTable: string[] = new Array<string>(INTERN_SLOTS).fill('');

/**
 * UTF-8 text from a byte range. Short ASCII strings (names, labels, phases: nearly every string a
 * Pod carries) are built directly, which is several times faster than a decoder call per string,
 * and looked up first in a small table of the last ones seen: pods repeat most of their strings
 * (label keys and values, condition types, `"True"`), so one copy serves them all, which saves the
 * decoding thread both the allocation and the collection of thousands of equal strings.
 */
export function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  const length = end - start;
  if (length <= INTERN_MAX_BYTES) {
    let hash = 0x811c9dc5;
    for (let index = start; index < end; index += 1) {
      const byte = bytes[index] as number;
      if (byte >= 0x80) return utf8.decode(bytes.subarray(start, end));
      hash = Math.imul(hash ^ byte, 0x01000193);
    }
    const slot = (hash >>> 0) & (INTERN_SLOTS - 1);
    const cached = internTable[slot] as string;
    if (cached.length === length) {
      let same = true;
      for (let index = 0; index < length; index += 1) {
        if (cached.charCodeAt(index) !== bytes[start + index]) {
          same = false;
          break;
        }
      }
      if (same) return cached;
    }
    const text =
      length <= 12
        ? asciiConcat(bytes, start, end)
        : String.fromCharCode.apply(null, bytes.subarray(start, end) as unknown as number[]);
    internTable[slot] = text;
    return text;
  }
  return utf8.decode(bytes.subarray(start, end));
}

/** A short ASCII range by concatenation: V8 keeps results under 13 characters flat. */
function asciiConcat(bytes: Uint8Array, start: number, end: number): string {
  let text = '';
  for (let index = start; index < end; index += 1)
    text += String.fromCharCode(bytes[index] as number);
  return text;
}
