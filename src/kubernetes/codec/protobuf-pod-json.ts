/**
 * Protobuf pods transcoded straight into the hop's JSON bytes: the JSON of the model's `Pod` that
 * ./pod-json-writer.ts would write for the `Pod` ./protobuf-pod-decoder.ts would build, without
 * building it. Only the pod's identity (name, namespace, uid, resourceVersion) becomes strings, for
 * the reflector's key and cursor; every other kept string is copied from the protobuf bytes into
 * the JSON bytes (escaped where JSON needs it), and every skipped field is stepped over by length.
 *
 * Why: in the worker thread a sync's cost was building each pod's objects and strings, collecting
 * them, and then walking them again to write the hop's JSON — two passes and a heap of garbage for
 * objects that never leave the thread. The main thread's `JSON.parse` builds the only copy that is
 * kept, as before. Validation happens here, once, where the bytes are read: every kept field's
 * wire type is checked, and the rules the JSON schema adds (a name and a uid) too.
 *
 * What it must equal: `JSON.parse` of its output equals `JSON.parse(writePodsJson([pod]))` for the
 * pod the decoder builds, key order included (tested on the decoder's own corpus), so the main
 * thread's pods are the same objects either way. Map entries are written in wire order, duplicates
 * included, which `JSON.parse` resolves as the decoder's assignments do (last value, first place).
 * Anything the decoder would not give a pod for — bytes that are not protobuf, a pod without name
 * or uid — answers `undefined`, and the caller decodes the same bytes the old way, so every error
 * text is unchanged.
 *
 * Size: one walker for the Pod message and the nested messages it keeps; like the decoder, it
 * cannot be split without sharing its cursor and span tables across files.
 */
import { MAX_CACHED_ANNOTATION_LENGTH } from '../../model/pod.js';
import { JSON_ESCAPES, type JsonBuffer, JSON_KEYS as K } from './pod-json-writer.js';
import { rfc3339Seconds } from './pod-protobuf.js';
import {
  decodeUtf8,
  WIRE_FIXED32,
  WIRE_FIXED64,
  WIRE_LENGTH_DELIMITED,
  WIRE_VARINT,
} from './protobuf-reader.js';

/** What the reflector needs of a pod as strings: its key and its version. */
export interface PodIdentity {
  name: string;
  namespace: string;
  uid: string;
  /** `''` when the pod has none. */
  resourceVersion: string;
}

const TEXT_ENCODER = new TextEncoder();

/** The bytes are not a readable pod: the caller decodes them the old way for the error. */
class Unreadable extends Error {}
const UNREADABLE = new Unreadable();

// A cursor over the bytes being walked. Module state rather than an object per message: the walk
// is synchronous and never re-entered, and a reader per nested message was most of the decoder's
// garbage.
let bytes: Uint8Array = new Uint8Array(0);
let at = 0;

const TWO_POW_32 = 2 ** 32;
/** The high half of the last varint read by `varint` (the low half is its result). */
let high = 0;

/** The next varint's low 32 bits (unsigned); its high 32 bits are left in `high`. */
function varint(end: number): number {
  let low = 0;
  high = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    if (at >= end) throw UNREADABLE;
    const byte = bytes[at++] as number;
    const bits = byte & 0x7f;
    if (shift < 28) low |= bits << shift;
    else if (shift === 28) {
      low |= (bits & 0x0f) << 28;
      high |= bits >>> 4;
    } else high |= bits << (shift - 32);
    if ((byte & 0x80) === 0) {
      high >>>= 0;
      return low >>> 0;
    }
  }
  throw UNREADABLE;
}

/** A varint that must fit 2^53 (tags, lengths). */
function uint(end: number): number {
  const low = varint(end);
  if (high >= 2 ** 21) throw UNREADABLE;
  return high * TWO_POW_32 + low;
}

/** The wire type of the tag `readTag` read last; its field number is the result. */
let wire = 0;

function readTag(end: number): number {
  const tag = uint(end);
  const field = Math.floor(tag / 8);
  if (field === 0) throw UNREADABLE;
  wire = tag & 7;
  return field;
}

/** A length-delimited field's end; its start is `at` on return. */
function spanEnd(end: number): number {
  const length = uint(end);
  if (length > end - at) throw UNREADABLE;
  return at + length;
}

function skip(end: number): void {
  switch (wire) {
    case WIRE_VARINT:
      varint(end);
      return;
    case WIRE_FIXED64:
      if (8 > end - at) throw UNREADABLE;
      at += 8;
      return;
    case WIRE_LENGTH_DELIMITED:
      at = spanEnd(end);
      return;
    case WIRE_FIXED32:
      if (4 > end - at) throw UNREADABLE;
      at += 4;
      return;
    default:
      throw UNREADABLE;
  }
}

/**
 * Spans are pairs `[start, end)` of `bytes`, kept in flat arrays: -1 start = absent. One table per
 * nesting level that needs one, reset per message, so the walk allocates nothing per pod.
 */
class Spans {
  readonly at: number[] = [];
  length = 0;
  push(start: number, end: number): void {
    this.at[this.length++] = start;
    this.at[this.length++] = end;
  }
  reset(): void {
    this.length = 0;
  }
}

/** The string at a span, as the decoder would read it (for the identity fields). */
function stringAt(start: number, end: number): string {
  return start < 0 ? '' : decodeUtf8(bytes, start, end);
}

/**
 * Per byte: 0 copied as it is, 1 escaped (a control character, `"`, `\\`), 2 not ASCII. One table
 * lookup per byte, not a comparison chain.
 */
const BYTE_CLASS = Uint8Array.from({ length: 256 }, (_, byte) =>
  byte >= 0x80 ? 2 : JSON_ESCAPES[byte] !== undefined ? 1 : 0,
);

/** The JSON string of the UTF-8 text at `[start, end)`, as the writer writes the decoded text. */
function copyString(out: JsonBuffer, start: number, end: number): void {
  let plain = true;
  for (let index = start; index < end; index += 1) {
    if (BYTE_CLASS[bytes[index] as number] !== 0) {
      plain = false;
      break;
    }
  }
  if (plain) {
    // Nearly every string of a pod: quotes around the bytes as they are.
    const length = end - start;
    out.reserve(length + 2);
    const target = out.bytes;
    let to = out.length;
    target[to++] = 0x22;
    if (length > 32) target.set(bytes.subarray(start, end), to);
    else
      for (let index = start; index < end; index += 1)
        target[to + index - start] = bytes[index] as number;
    to += length;
    target[to++] = 0x22;
    out.length = to;
    return;
  }
  // Escapes or text that is not ASCII (decoded first: invalid sequences become U+FFFD, as the
  // decoder's text): written as the writer writes any string.
  out.string(decodeUtf8(bytes, start, end));
}

/** `"key":` after a comma unless it is the object's first. */
function name(out: JsonBuffer, key: { first: Uint8Array; next: Uint8Array }, first: boolean): void {
  out.raw(first ? key.first : key.next);
}

/** The string field `number` of the message at `[start, end)`, last one wins; -1 if none. */
let foundStart = -1;
let foundEnd = -1;
function findString(start: number, end: number, number: number): void {
  foundStart = -1;
  foundEnd = -1;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (field === number && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      foundStart = at;
      foundEnd = fieldEnd;
      at = fieldEnd;
    } else skip(end);
  }
}

/**
 * A `metav1.Time` message at `[start, end)` as the decoder formats it: `undefined` for an empty
 * message (JSON's absent `null`), else its seconds as RFC 3339.
 */
function timeAt(start: number, end: number): string | undefined {
  if (start >= end) return undefined;
  let seconds = 0;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (field === 1 && wire === WIRE_VARINT) {
      const low = varint(end);
      seconds =
        high >= 0x80000000 ? (high - TWO_POW_32) * TWO_POW_32 + low : high * TWO_POW_32 + low;
    } else skip(end);
  }
  return rfc3339Seconds(seconds);
}

/** An int32 varint field's value, two's complement. */
function int32(end: number): number {
  return varint(end) | 0;
}

/** A `map<string, string>` from its entries' spans, in wire order. */
function writeMap(out: JsonBuffer, entries: Spans, bound: boolean): void {
  out.byte(0x7b);
  for (let index = 0; index < entries.length; index += 2) {
    const start = entries.at[index] as number;
    const end = entries.at[index + 1] as number;
    let keyStart = -1;
    let keyEnd = -1;
    let valueStart = -1;
    let valueEnd = -1;
    at = start;
    while (at < end) {
      const field = readTag(end);
      if ((field === 1 || field === 2) && wire === WIRE_LENGTH_DELIMITED) {
        const fieldEnd = spanEnd(end);
        if (field === 1) {
          keyStart = at;
          keyEnd = fieldEnd;
        } else {
          valueStart = at;
          valueEnd = fieldEnd;
        }
        at = fieldEnd;
      } else skip(end);
    }
    if (index > 0) out.byte(0x2c);
    if (keyStart < 0) out.raw(EMPTY_STRING);
    else copyString(out, keyStart, keyEnd);
    out.byte(0x3a);
    if (valueStart < 0) out.raw(EMPTY_STRING);
    else if (bound && valueEnd - valueStart > MAX_CACHED_ANNOTATION_LENGTH) {
      // Long enough in bytes that it may be too long in characters: cut as `boundAnnotations`.
      const value = decodeUtf8(bytes, valueStart, valueEnd);
      out.string(
        value.length > MAX_CACHED_ANNOTATION_LENGTH
          ? `${value.slice(0, MAX_CACHED_ANNOTATION_LENGTH)}… (${value.length - MAX_CACHED_ANNOTATION_LENGTH} more characters)`
          : value,
      );
    } else copyString(out, valueStart, valueEnd);
  }
  out.byte(0x7d);
}

const EMPTY_STRING = TEXT_ENCODER.encode('""');

/** A string field written when present and non-empty (the decoder's `''` is an absent field). */
function optionalString(
  out: JsonBuffer,
  key: { first: Uint8Array; next: Uint8Array },
  start: number,
  end: number,
  first: boolean,
): boolean {
  if (start < 0 || start === end) return first;
  name(out, key, first);
  copyString(out, start, end);
  return false;
}

function optionalTime(
  out: JsonBuffer,
  key: { first: Uint8Array; next: Uint8Array },
  start: number,
  end: number,
  first: boolean,
): boolean {
  if (start < 0) return first;
  const text = timeAt(start, end);
  if (text === undefined) return first;
  name(out, key, first);
  out.string(text);
  return false;
}

const ports = new Spans();

function writeContainer(out: JsonBuffer, start: number, end: number): void {
  let nameStart = -1;
  let nameEnd = -1;
  ports.reset();
  at = start;
  while (at < end) {
    const field = readTag(end);
    if ((field === 1 || field === 6) && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        nameStart = at;
        nameEnd = fieldEnd;
      } else ports.push(at, fieldEnd);
      at = fieldEnd;
    } else skip(end);
  }
  out.byte(0x7b);
  name(out, K.name, true);
  if (nameStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, nameStart, nameEnd);
  name(out, K.ports, false);
  out.byte(0x5b);
  for (let index = 0; index < ports.length; index += 2) {
    if (index > 0) out.byte(0x2c);
    writePort(out, ports.at[index] as number, ports.at[index + 1] as number);
  }
  out.byte(0x5d);
  out.byte(0x7d);
}

function writePort(out: JsonBuffer, start: number, end: number): void {
  let nameStart = -1;
  let nameEnd = -1;
  let protocolStart = -1;
  let protocolEnd = -1;
  let containerPort = 0;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if ((field === 1 || field === 4) && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        nameStart = at;
        nameEnd = fieldEnd;
      } else {
        protocolStart = at;
        protocolEnd = fieldEnd;
      }
      at = fieldEnd;
    } else if (field === 3 && wire === WIRE_VARINT) containerPort = int32(end);
    else skip(end);
  }
  out.byte(0x7b);
  const first = optionalString(out, K.name, nameStart, nameEnd, true);
  name(out, K.containerPort, first);
  out.number(containerPort);
  optionalString(out, K.protocol, protocolStart, protocolEnd, false);
  out.byte(0x7d);
}

/** `{kind, name, uid, controller?}`: fields 1, 3, 4 and 6 (written only when true). */
function writeOwnerReference(out: JsonBuffer, start: number, end: number): void {
  let kindStart = -1;
  let kindEnd = -1;
  let nameStart = -1;
  let nameEnd = -1;
  let uidStart = -1;
  let uidEnd = -1;
  let controller = false;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if ((field === 1 || field === 3 || field === 4) && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        kindStart = at;
        kindEnd = fieldEnd;
      } else if (field === 3) {
        nameStart = at;
        nameEnd = fieldEnd;
      } else {
        uidStart = at;
        uidEnd = fieldEnd;
      }
      at = fieldEnd;
    } else if (field === 6 && wire === WIRE_VARINT) {
      controller = varint(end) !== 0 || high !== 0;
    } else skip(end);
  }
  out.byte(0x7b);
  name(out, K.kind, true);
  if (kindStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, kindStart, kindEnd);
  name(out, K.name, false);
  if (nameStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, nameStart, nameEnd);
  name(out, K.uid, false);
  if (uidStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, uidStart, uidEnd);
  if (controller) {
    name(out, K.controller, false);
    out.boolean(true);
  }
  out.byte(0x7d);
}

function writeCondition(out: JsonBuffer, start: number, end: number): void {
  // type, status, lastTransitionTime, reason, message: fields 1, 2, 4, 5, 6.
  let typeStart = -1;
  let typeEnd = -1;
  let statusStart = -1;
  let statusEnd = -1;
  let timeStart = -1;
  let timeEnd = -1;
  let reasonStart = -1;
  let reasonEnd = -1;
  let messageStart = -1;
  let messageEnd = -1;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (
      wire === WIRE_LENGTH_DELIMITED &&
      (field === 1 || field === 2 || (field >= 4 && field <= 6))
    ) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        typeStart = at;
        typeEnd = fieldEnd;
      } else if (field === 2) {
        statusStart = at;
        statusEnd = fieldEnd;
      } else if (field === 4) {
        timeStart = at;
        timeEnd = fieldEnd;
      } else if (field === 5) {
        reasonStart = at;
        reasonEnd = fieldEnd;
      } else {
        messageStart = at;
        messageEnd = fieldEnd;
      }
      at = fieldEnd;
    } else skip(end);
  }
  out.byte(0x7b);
  name(out, K.type, true);
  if (typeStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, typeStart, typeEnd);
  name(out, K.status, false);
  if (statusStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, statusStart, statusEnd);
  optionalString(out, K.reason, reasonStart, reasonEnd, false);
  optionalString(out, K.message, messageStart, messageEnd, false);
  optionalTime(out, K.lastTransitionTime, timeStart, timeEnd, false);
  out.byte(0x7d);
}

/** `waiting {reason?, message?}`: fields 1 and 2 of `ContainerStateWaiting`. */
function writeWaiting(out: JsonBuffer, start: number, end: number): void {
  let reasonStart = -1;
  let reasonEnd = -1;
  let messageStart = -1;
  let messageEnd = -1;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if ((field === 1 || field === 2) && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        reasonStart = at;
        reasonEnd = fieldEnd;
      } else {
        messageStart = at;
        messageEnd = fieldEnd;
      }
      at = fieldEnd;
    } else skip(end);
  }
  out.byte(0x7b);
  const first = optionalString(out, K.reason, reasonStart, reasonEnd, true);
  optionalString(out, K.message, messageStart, messageEnd, first);
  out.byte(0x7d);
}

/** `running {startedAt?}`: field 1 of `ContainerStateRunning`, the last one. */
function writeRunning(out: JsonBuffer, start: number, end: number): void {
  let timeStart = -1;
  let timeEnd = -1;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      timeStart = at;
      timeEnd = fieldEnd;
      at = fieldEnd;
    } else skip(end);
  }
  out.byte(0x7b);
  optionalTime(out, K.startedAt, timeStart, timeEnd, true);
  out.byte(0x7d);
}

/** `terminated {exitCode, reason?, message?, startedAt?, finishedAt?}`: fields 1, 3–6. */
function writeTerminated(out: JsonBuffer, start: number, end: number): void {
  let exitCode = 0;
  let reasonStart = -1;
  let reasonEnd = -1;
  let messageStart = -1;
  let messageEnd = -1;
  let startedStart = -1;
  let startedEnd = -1;
  let finishedStart = -1;
  let finishedEnd = -1;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (field === 1 && wire === WIRE_VARINT) exitCode = int32(end);
    else if (field >= 3 && field <= 6 && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 3) {
        reasonStart = at;
        reasonEnd = fieldEnd;
      } else if (field === 4) {
        messageStart = at;
        messageEnd = fieldEnd;
      } else if (field === 5) {
        startedStart = at;
        startedEnd = fieldEnd;
      } else {
        finishedStart = at;
        finishedEnd = fieldEnd;
      }
      at = fieldEnd;
    } else skip(end);
  }
  out.byte(0x7b);
  name(out, K.exitCode, true);
  out.number(exitCode);
  optionalString(out, K.reason, reasonStart, reasonEnd, false);
  optionalString(out, K.message, messageStart, messageEnd, false);
  optionalTime(out, K.startedAt, startedStart, startedEnd, false);
  optionalTime(out, K.finishedAt, finishedStart, finishedEnd, false);
  out.byte(0x7d);
}

/** A `ContainerState`: each of waiting (1), running (2), terminated (3) present when sent. */
function writeState(out: JsonBuffer, start: number, end: number): void {
  let waitingStart = -1;
  let waitingEnd = -1;
  let runningStart = -1;
  let runningEnd = -1;
  let terminatedStart = -1;
  let terminatedEnd = -1;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (field >= 1 && field <= 3 && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        waitingStart = at;
        waitingEnd = fieldEnd;
      } else if (field === 2) {
        runningStart = at;
        runningEnd = fieldEnd;
      } else {
        terminatedStart = at;
        terminatedEnd = fieldEnd;
      }
      at = fieldEnd;
    } else skip(end);
  }
  out.byte(0x7b);
  let first = true;
  if (waitingStart >= 0) {
    name(out, K.waiting, first);
    writeWaiting(out, waitingStart, waitingEnd);
    first = false;
  }
  if (runningStart >= 0) {
    name(out, K.running, first);
    writeRunning(out, runningStart, runningEnd);
    first = false;
  }
  if (terminatedStart >= 0) {
    name(out, K.terminated, first);
    writeTerminated(out, terminatedStart, terminatedEnd);
  }
  out.byte(0x7d);
}

function writeContainerStatus(out: JsonBuffer, start: number, end: number): void {
  let nameStart = -1;
  let nameEnd = -1;
  let stateStart = -1;
  let stateEnd = -1;
  let lastStateStart = -1;
  let lastStateEnd = -1;
  let ready = false;
  let restartCount = 0;
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (field >= 1 && field <= 3 && wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = spanEnd(end);
      if (field === 1) {
        nameStart = at;
        nameEnd = fieldEnd;
      } else if (field === 2) {
        stateStart = at;
        stateEnd = fieldEnd;
      } else {
        lastStateStart = at;
        lastStateEnd = fieldEnd;
      }
      at = fieldEnd;
    } else if (field === 4 && wire === WIRE_VARINT) {
      ready = varint(end) !== 0 || high !== 0;
    } else if (field === 5 && wire === WIRE_VARINT) restartCount = int32(end);
    else skip(end);
  }
  out.byte(0x7b);
  name(out, K.name, true);
  if (nameStart < 0) out.raw(EMPTY_STRING);
  else copyString(out, nameStart, nameEnd);
  name(out, K.ready, false);
  out.boolean(ready);
  name(out, K.restartCount, false);
  out.number(restartCount);
  if (stateStart >= 0) {
    name(out, K.state, false);
    writeState(out, stateStart, stateEnd);
  }
  if (lastStateStart >= 0) {
    name(out, K.lastState, false);
    writeState(out, lastStateStart, lastStateEnd);
  }
  out.byte(0x7d);
}

/** `{<key>: <string field 1>}` for each span: scheduling and readiness gates. */
function writeGates(
  out: JsonBuffer,
  gates: Spans,
  key: { first: Uint8Array; next: Uint8Array },
): void {
  out.byte(0x5b);
  for (let index = 0; index < gates.length; index += 2) {
    if (index > 0) out.byte(0x2c);
    findString(gates.at[index] as number, gates.at[index + 1] as number, 1);
    out.byte(0x7b);
    name(out, key, true);
    if (foundStart < 0) out.raw(EMPTY_STRING);
    else copyString(out, foundStart, foundEnd);
    out.byte(0x7d);
  }
  out.byte(0x5d);
}

function writeMessages(
  out: JsonBuffer,
  spans: Spans,
  write: (out: JsonBuffer, start: number, end: number) => void,
): void {
  out.byte(0x5b);
  for (let index = 0; index < spans.length; index += 2) {
    if (index > 0) out.byte(0x2c);
    write(out, spans.at[index] as number, spans.at[index + 1] as number);
  }
  out.byte(0x5d);
}

// The pod's fields, as spans, collected by `walkPod` and written by `writePodJson`: the JSON's key
// order is not the wire's (spec's containers come first on the wire and last in JSON), and a field
// sent twice counts once, the last time, as the decoder reads it.
const labels = new Spans();
const annotations = new Spans();
const nodeSelector = new Spans();
const schedulingGates = new Spans();
const readinessGates = new Spans();
const containers = new Spans();
const conditions = new Spans();
const containerStatuses = new Spans();
const ownerReferences = new Spans();
/** Singular fields' spans: start and end per slot (`S_*`). */
const single = new Array<number>(2 * 10).fill(-1);
const S_NAME = 0;
const S_NAMESPACE = 2;
const S_UID = 4;
const S_RESOURCE_VERSION = 6;
const S_DELETION = 8;
const S_NODE_NAME = 10;
const S_SUBDOMAIN = 12;
const S_PHASE = 14;
const S_POD_IP = 16;
const S_CREATION = 18;

function keep(slot: number, start: number, end: number): void {
  single[slot] = start;
  single[slot + 1] = end;
}

/**
 * Where a length-delimited field of a message goes: a singular field's slot in `single` (the last
 * one sent wins), or the spans of a repeated field (every one kept, in order). Indexed by field
 * number; a field with no target is skipped.
 */
type FieldTargets = ReadonlyArray<number | Spans | undefined>;

function targets(entries: Array<[number, number | Spans]>): FieldTargets {
  const table: Array<number | Spans | undefined> = [];
  for (const [field, target] of entries) table[field] = target;
  return table;
}

/**
 * `ObjectMeta`: name 1, namespace 3, uid 5, resourceVersion 6, creationTimestamp 8,
 * deletionTimestamp 9, maps 11, 12, ownerReferences 13.
 */
const METADATA = targets([
  [1, S_NAME],
  [3, S_NAMESPACE],
  [5, S_UID],
  [6, S_RESOURCE_VERSION],
  [8, S_CREATION],
  [9, S_DELETION],
  [11, labels],
  [12, annotations],
  [13, ownerReferences],
]);
/** `PodSpec`: containers 2, nodeSelector 7, nodeName 10, subdomain 17, gates 28 and 38. */
const SPEC = targets([
  [2, containers],
  [7, nodeSelector],
  [10, S_NODE_NAME],
  [17, S_SUBDOMAIN],
  [28, readinessGates],
  [38, schedulingGates],
]);
/** `PodStatus`: phase 1, conditions 2, podIP 6, containerStatuses 8. */
const STATUS = targets([
  [1, S_PHASE],
  [2, conditions],
  [6, S_POD_IP],
  [8, containerStatuses],
]);

/** Records the spans of the message's fields that have a target, up to `end`. */
function walkFields(end: number, fields: FieldTargets): void {
  while (at < end) {
    const field = readTag(end);
    if (wire !== WIRE_LENGTH_DELIMITED) {
      skip(end);
      continue;
    }
    const fieldEnd = spanEnd(end);
    const target = fields[field];
    if (typeof target === 'number') keep(target, at, fieldEnd);
    else if (target !== undefined) target.push(at, fieldEnd);
    at = fieldEnd;
  }
}

/** Collects the spans of a Pod message at `[start, end)`. */
function walkPod(start: number, end: number): void {
  single.fill(-1);
  labels.reset();
  annotations.reset();
  nodeSelector.reset();
  schedulingGates.reset();
  readinessGates.reset();
  containers.reset();
  conditions.reset();
  containerStatuses.reset();
  ownerReferences.reset();
  at = start;
  while (at < end) {
    const field = readTag(end);
    if (wire !== WIRE_LENGTH_DELIMITED || field < 1 || field > 3) {
      skip(end);
      continue;
    }
    const fieldEnd = spanEnd(end);
    walkFields(fieldEnd, field === 1 ? METADATA : field === 2 ? SPEC : STATUS);
    at = fieldEnd;
  }
}

function singleString(out: JsonBuffer, slot: number): void {
  const start = single[slot] as number;
  if (start < 0) out.raw(EMPTY_STRING);
  else copyString(out, start, single[slot + 1] as number);
}

function optionalSingle(
  out: JsonBuffer,
  key: { first: Uint8Array; next: Uint8Array },
  slot: number,
  first: boolean,
): boolean {
  return optionalString(out, key, single[slot] as number, single[slot + 1] as number, first);
}

/** Writes the pod whose spans `walkPod` collected, as `writePodsJson` writes the decoded `Pod`. */
function writePod(out: JsonBuffer): void {
  out.byte(0x7b);
  name(out, K.metadata, true);
  out.byte(0x7b);
  name(out, K.name, true);
  singleString(out, S_NAME);
  name(out, K.namespace, false);
  singleString(out, S_NAMESPACE);
  name(out, K.uid, false);
  singleString(out, S_UID);
  optionalSingle(out, K.resourceVersion, S_RESOURCE_VERSION, false);
  optionalTime(
    out,
    K.creationTimestamp,
    single[S_CREATION] as number,
    single[S_CREATION + 1] as number,
    false,
  );
  optionalTime(
    out,
    K.deletionTimestamp,
    single[S_DELETION] as number,
    single[S_DELETION + 1] as number,
    false,
  );
  name(out, K.labels, false);
  writeMap(out, labels, false);
  name(out, K.annotations, false);
  writeMap(out, annotations, true);
  if (ownerReferences.length > 0) {
    name(out, K.ownerReferences, false);
    writeMessages(out, ownerReferences, writeOwnerReference);
  }
  out.byte(0x7d);

  name(out, K.spec, false);
  out.byte(0x7b);
  let first = optionalSingle(out, K.nodeName, S_NODE_NAME, true);
  first = optionalSingle(out, K.subdomain, S_SUBDOMAIN, first);
  name(out, K.nodeSelector, first);
  writeMap(out, nodeSelector, false);
  name(out, K.schedulingGates, false);
  writeGates(out, schedulingGates, K.name);
  if (readinessGates.length > 0) {
    name(out, K.readinessGates, false);
    writeGates(out, readinessGates, K.conditionType);
  }
  name(out, K.containers, false);
  writeMessages(out, containers, writeContainer);
  out.byte(0x7d);

  name(out, K.status, false);
  out.byte(0x7b);
  first = optionalSingle(out, K.phase, S_PHASE, true);
  first = optionalSingle(out, K.podIP, S_POD_IP, first);
  name(out, K.conditions, first);
  writeMessages(out, conditions, writeCondition);
  name(out, K.containerStatuses, false);
  writeMessages(out, containerStatuses, writeContainerStatus);
  out.byte(0x7d);
  out.byte(0x7d);
}

/**
 * Appends the JSON of the Pod message at `[start, end)` of `source` to `out` and answers its
 * identity, or answers `undefined` (with `out` as it was) when the decoder would give no pod: bytes
 * that are not protobuf, or a pod without a name or a uid.
 */
export function transcodeProtobufPod(
  source: Uint8Array,
  start: number,
  end: number,
  out: JsonBuffer,
): PodIdentity | undefined {
  const mark = out.length;
  bytes = source;
  try {
    walkPod(start, end);
    const identity: PodIdentity = {
      name: stringAt(single[S_NAME] as number, single[S_NAME + 1] as number),
      namespace: stringAt(single[S_NAMESPACE] as number, single[S_NAMESPACE + 1] as number),
      uid: stringAt(single[S_UID] as number, single[S_UID + 1] as number),
      resourceVersion: stringAt(
        single[S_RESOURCE_VERSION] as number,
        single[S_RESOURCE_VERSION + 1] as number,
      ),
    };
    if (identity.name === '' || identity.uid === '') return undefined;
    writePod(out);
    return identity;
  } catch (error) {
    out.length = mark;
    if (error instanceof Unreadable) return undefined;
    throw error;
  } finally {
    bytes = EMPTY;
  }
}

const EMPTY = new Uint8Array(0);
