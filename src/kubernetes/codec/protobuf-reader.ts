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

const NO_BYTES = new Uint8Array(0);

/**
 * The wire format's one reader: a cursor (`bytes`, `at`) that every read moves, with each read
 * bounded by the `end` of the message it is in. Mutable and allocation-free, so the pod transcoder
 * (./protobuf-pod-json.ts) walks a whole pod with one shared cursor; `ProtobufReader` below is the
 * same cursor with its bounds kept, for the envelope, list and Status messages read once per page
 * or frame.
 */
export class WireCursor {
  bytes: Uint8Array = NO_BYTES;
  at = 0;
  /** The high 32 bits (unsigned) of the last varint `varint` read; its low bits are its result. */
  high = 0;
  /** The wire type of the tag `tag` read last; its field number is that call's result. */
  wire = 0;

  /** The next varint's low 32 bits (unsigned); its high 32 bits are left in `high`. */
  varint(end: number): number {
    let low = 0;
    let high = 0;
    const bytes = this.bytes;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.at >= end) throw new ProtobufDecodeError('varint runs past its message');
      const byte = bytes[this.at++] as number;
      const bits = byte & 0x7f;
      if (shift < 28) low |= bits << shift;
      else if (shift === 28) {
        low |= (bits & 0x0f) << 28;
        high |= bits >>> 4;
      } else high |= bits << (shift - 32);
      if ((byte & 0x80) === 0) {
        this.high = high >>> 0;
        return low >>> 0;
      }
    }
    throw new ProtobufDecodeError('varint longer than ten bytes');
  }

  /** A varint read as an unsigned count (tags, lengths): must fit 2^53. */
  uint(end: number): number {
    const low = this.varint(end);
    if (this.high >= 2 ** 21) throw new ProtobufDecodeError('varint too large for a length');
    return this.high * TWO_POW_32 + low;
  }

  /** An `int64` varint as a number (exact within ±2^53, which every count and time here is). */
  int64(end: number): number {
    const low = this.varint(end);
    const high = this.high;
    return high >= 0x80000000 ? (high - TWO_POW_32) * TWO_POW_32 + low : high * TWO_POW_32 + low;
  }

  /** A `bool` varint: anything but zero is true. */
  bool(end: number): boolean {
    return this.varint(end) !== 0 || this.high !== 0;
  }

  /** The next field's number; its wire type is left in `wire`. */
  tag(end: number): number {
    const tag = this.uint(end);
    const field = Math.floor(tag / 8);
    if (field === 0) throw new ProtobufDecodeError('field number 0');
    this.wire = tag & 7;
    return field;
  }

  /** A length-delimited field's end; its start is `at` on return. */
  spanEnd(end: number): number {
    const length = this.uint(end);
    if (length > end - this.at) {
      throw new ProtobufDecodeError('length-delimited field runs past its message');
    }
    return this.at + length;
  }

  /** Where the field `stepOver` stepped over last starts; it ends at `at`. */
  spanStart = 0;

  /**
   * Steps over a length-delimited field whose tag was just read: its bytes are `[spanStart, at)`
   * on return, for a walk that keeps offsets rather than reading the field where it is.
   */
  stepOver(end: number): void {
    const fieldEnd = this.spanEnd(end);
    this.spanStart = this.at;
    this.at = fieldEnd;
  }

  /** Skips one field of wire type `wire` (groups, long gone from proto3 and never sent, fail). */
  skip(end: number): void {
    switch (this.wire) {
      case WIRE_VARINT:
        this.varint(end);
        return;
      case WIRE_FIXED64:
        this.#advance(8, end);
        return;
      case WIRE_LENGTH_DELIMITED:
        this.at = this.spanEnd(end);
        return;
      case WIRE_FIXED32:
        this.#advance(4, end);
        return;
      default:
        throw new ProtobufDecodeError(`unsupported wire type ${this.wire}`);
    }
  }

  #advance(count: number, end: number): void {
    if (count > end - this.at) {
      throw new ProtobufDecodeError('fixed-width field runs past its message');
    }
    this.at += count;
  }
}

/** A cursor over one message's bytes, `[position, end)` of `bytes`. */
export class ProtobufReader {
  readonly bytes: Uint8Array;
  readonly end: number;
  readonly #cursor = new WireCursor();

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    expectBounds(bytes, start, end);
    this.bytes = bytes;
    this.end = end;
    this.#cursor.bytes = bytes;
    this.#cursor.at = start;
  }

  /** Where the next read starts. */
  get position(): number {
    return this.#cursor.at;
  }

  /** True while fields remain. */
  more(): boolean {
    return this.#cursor.at < this.end;
  }

  /** A varint read as an unsigned count (tags, lengths): must fit 2^53. */
  uint(): number {
    return this.#cursor.uint(this.end);
  }

  /** An `int32` field: the low 32 bits, two's complement. */
  int32(): number {
    return this.#cursor.varint(this.end) | 0;
  }

  /** An `int64` field as a number (exact within ±2^53, which every count and time here is). */
  int64(): number {
    return this.#cursor.int64(this.end);
  }

  bool(): boolean {
    return this.#cursor.bool(this.end);
  }

  /** The next field's tag: `[field number, wire type]`. */
  tag(): [number, number] {
    const field = this.#cursor.tag(this.end);
    return [field, this.#cursor.wire];
  }

  /** A length-delimited field's bounds, `[start, end)`, with the cursor moved past it. */
  span(): [number, number] {
    const end = this.#cursor.spanEnd(this.end);
    const start = this.#cursor.at;
    this.#cursor.at = end;
    return [start, end];
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
    this.#cursor.wire = wireType;
    this.#cursor.skip(this.end);
  }
}

/** Checks that a message's bounds, `[start, end)`, lie inside its buffer. */
export function expectBounds(bytes: Uint8Array, start: number, end: number): void {
  if (start < 0 || end > bytes.length || start > end) {
    throw new ProtobufDecodeError('message bounds outside its buffer');
  }
}

/** Checks that field `field` (named for the error) has the wire type its schema gives it. */
export function expectWireType(wireType: number, expected: number, field: string): void {
  if (wireType !== expected) {
    throw new ProtobufDecodeError(`${field} has wire type ${wireType}, expected ${expected}`);
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
    const text = length <= 12 ? asciiConcat(bytes, start, end) : asciiSlice(bytes, start, end);
    internTable[slot] = text;
    return text;
  }
  return utf8.decode(bytes.subarray(start, end));
}

/**
 * Node's own latin1 slice of a byte range (for ASCII, the same text), which takes any
 * `Uint8Array`: ~60 ns for a 36-byte uid against ~175 ns through `String.fromCharCode.apply` on a
 * view, which also left the view and a copy of its bytes as arguments to collect. Every runtime
 * the project supports has it (the unit lanes run the oldest and the newest).
 */
const latin1Slice = (
  Buffer.prototype as unknown as {
    latin1Slice: (this: Uint8Array, start: number, end: number) => string;
  }
).latin1Slice;

function asciiSlice(bytes: Uint8Array, start: number, end: number): string {
  return latin1Slice.call(bytes, start, end);
}

/** A short ASCII range by concatenation: V8 keeps results under 13 characters flat. */
function asciiConcat(bytes: Uint8Array, start: number, end: number): string {
  let text = '';
  for (let index = start; index < end; index += 1)
    text += String.fromCharCode(bytes[index] as number);
  return text;
}
