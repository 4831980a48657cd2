/**
 * Protobuf pods transcoded straight into the hop's JSON bytes: the JSON of the model's `Pod` that
 * ./pod-json-writer.ts writes for the `Pod` the schema (../../model/pod.ts) reads from the same pod
 * in JSON, without building it. This is the only reader of a protobuf pod: only the pod's identity
 * (name, namespace, uid, resourceVersion) becomes strings, for the reflector's key and cursor;
 * every other kept string is copied from the protobuf bytes into the JSON bytes (escaped where JSON
 * needs it), and every skipped field is stepped over by length.
 *
 * Why: in the worker thread a sync's cost was building each pod's objects and strings, collecting
 * them, and then walking them again to write the hop's JSON — two passes and a heap of garbage for
 * objects that never leave the thread. The main thread's `JSON.parse` builds the only copy that is
 * kept. Validation happens here, once, where the bytes are read: a kept field of the wrong wire
 * type is skipped as protobuf skips it, and the rules the JSON schema adds (a name and a uid) are
 * checked, a refusal naming the field as the schema would.
 *
 * What it must equal: `JSON.parse` of its output equals `parsePod` of the same pod in the API
 * server's JSON, key order included (tested on one corpus written in both encodings), so the main
 * thread's pods are the same objects either way. The JSON equivalence rules, from the Go types'
 * JSON tags: a string field tagged `omitempty` that arrives empty is absent (gogo-protobuf writes
 * non-pointer strings even when empty); a field without `omitempty` keeps its zero value
 * (`restartCount`, `ready`, `exitCode`, condition `type`/`status`); a `metav1.Time` is an RFC 3339
 * UTC string to the second, and a zero one (an empty message) is absent, as JSON's `null`. Map
 * entries are written in wire order, duplicates included, which `JSON.parse` resolves as Go's
 * decoder does (last value, first place). Field numbers are those of k8s.io/api core/v1 and
 * k8s.io/apimachinery meta/v1 `generated.proto`.
 *
 * Size: one walker for the Pod message and the nested messages it keeps; it cannot be split
 * without sharing its cursor and span tables across files.
 */
import { MAX_CACHED_ANNOTATION_LENGTH, MalformedPodError } from '../../model/pod.js';
import { JSON_ESCAPES, type JsonBuffer, JSON_KEYS as K } from './pod-json-writer.js';
import { decodeUtf8, WIRE_LENGTH_DELIMITED, WIRE_VARINT, WireCursor } from './protobuf-reader.js';
import { rfc3339Seconds } from './protobuf-time.js';

/** What the reflector needs of a pod as strings: its key and its version. */
interface PodIdentity {
  name: string;
  namespace: string;
  uid: string;
  /** `''` when the pod has none. */
  resourceVersion: string;
}

const TEXT_ENCODER = new TextEncoder();

// The one cursor every walk of this module moves: the walk is synchronous and never re-entered,
// and a reader per nested message was most of a decoder's garbage (./protobuf-reader.ts).
const c = new WireCursor();

/**
 * Spans are pairs `[start, end)` of the bytes walked, kept in flat arrays: -1 start = absent. One table per
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

/** The string at a span (for the identity fields). */
function stringAt(start: number, end: number): string {
  return start < 0 ? '' : decodeUtf8(c.bytes, start, end);
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
  const bytes = c.bytes;
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
  // Escapes or text that is not ASCII (decoded first: invalid sequences become U+FFFD, as Go's
  // JSON writes them): written as the writer writes any string.
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === number && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      foundStart = c.at;
      foundEnd = fieldEnd;
      c.at = fieldEnd;
    } else c.skip(end);
  }
}

/**
 * A `metav1.Time` message at `[start, end)` as JSON has it: `undefined` for an empty
 * message (JSON's absent `null`), else its seconds as RFC 3339.
 */
function timeAt(start: number, end: number): string | undefined {
  if (start >= end) return undefined;
  let seconds = 0;
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === 1 && c.wire === WIRE_VARINT) seconds = c.int64(end);
    else c.skip(end);
  }
  return rfc3339Seconds(seconds);
}

/** An int32 varint field's value, two's complement. */
function int32(end: number): number {
  return c.varint(end) | 0;
}

// The key and value spans of the map entry `mapEntry` read last; -1 when absent.
let keyStart = -1;
let keyEnd = -1;
let valueStart = -1;
let valueEnd = -1;

/** Reads one `map<string, string>` entry (`{1: key, 2: value}`) from `c.at` to `end`. */
function mapEntry(end: number): void {
  keyStart = -1;
  keyEnd = -1;
  valueStart = -1;
  valueEnd = -1;
  while (c.at < end) {
    const field = c.tag(end);
    if ((field === 1 || field === 2) && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        keyStart = c.at;
        keyEnd = fieldEnd;
      } else {
        valueStart = c.at;
        valueEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else c.skip(end);
  }
}

/** A `map<string, string>` from its entries' spans, in wire order. */
function writeMap(out: JsonBuffer, entries: Spans, bound: boolean): void {
  out.byte(0x7b);
  for (let index = 0; index < entries.length; index += 2) {
    c.at = entries.at[index] as number;
    mapEntry(entries.at[index + 1] as number);
    if (index > 0) out.byte(0x2c);
    if (keyStart < 0) out.raw(EMPTY_STRING);
    else copyString(out, keyStart, keyEnd);
    out.byte(0x3a);
    if (valueStart < 0) out.raw(EMPTY_STRING);
    else if (bound && valueEnd - valueStart > MAX_CACHED_ANNOTATION_LENGTH) {
      // Long enough in bytes that it may be too long in characters: cut as `boundAnnotations`.
      const value = decodeUtf8(c.bytes, valueStart, valueEnd);
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

/** A string field written when present and non-empty (an empty one is absent in JSON). */
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if ((field === 1 || field === 6) && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        nameStart = c.at;
        nameEnd = fieldEnd;
      } else ports.push(c.at, fieldEnd);
      c.at = fieldEnd;
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if ((field === 1 || field === 4) && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        nameStart = c.at;
        nameEnd = fieldEnd;
      } else {
        protocolStart = c.at;
        protocolEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else if (field === 3 && c.wire === WIRE_VARINT) containerPort = int32(end);
    else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if ((field === 1 || field === 3 || field === 4) && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        kindStart = c.at;
        kindEnd = fieldEnd;
      } else if (field === 3) {
        nameStart = c.at;
        nameEnd = fieldEnd;
      } else {
        uidStart = c.at;
        uidEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else if (field === 6 && c.wire === WIRE_VARINT) {
      controller = c.bool(end);
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (
      c.wire === WIRE_LENGTH_DELIMITED &&
      (field === 1 || field === 2 || (field >= 4 && field <= 6))
    ) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        typeStart = c.at;
        typeEnd = fieldEnd;
      } else if (field === 2) {
        statusStart = c.at;
        statusEnd = fieldEnd;
      } else if (field === 4) {
        timeStart = c.at;
        timeEnd = fieldEnd;
      } else if (field === 5) {
        reasonStart = c.at;
        reasonEnd = fieldEnd;
      } else {
        messageStart = c.at;
        messageEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if ((field === 1 || field === 2) && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        reasonStart = c.at;
        reasonEnd = fieldEnd;
      } else {
        messageStart = c.at;
        messageEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === 1 && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      timeStart = c.at;
      timeEnd = fieldEnd;
      c.at = fieldEnd;
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === 1 && c.wire === WIRE_VARINT) exitCode = int32(end);
    else if (field >= 3 && field <= 6 && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 3) {
        reasonStart = c.at;
        reasonEnd = fieldEnd;
      } else if (field === 4) {
        messageStart = c.at;
        messageEnd = fieldEnd;
      } else if (field === 5) {
        startedStart = c.at;
        startedEnd = fieldEnd;
      } else {
        finishedStart = c.at;
        finishedEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field >= 1 && field <= 3 && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        waitingStart = c.at;
        waitingEnd = fieldEnd;
      } else if (field === 2) {
        runningStart = c.at;
        runningEnd = fieldEnd;
      } else {
        terminatedStart = c.at;
        terminatedEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else c.skip(end);
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field >= 1 && field <= 3 && c.wire === WIRE_LENGTH_DELIMITED) {
      const fieldEnd = c.spanEnd(end);
      if (field === 1) {
        nameStart = c.at;
        nameEnd = fieldEnd;
      } else if (field === 2) {
        stateStart = c.at;
        stateEnd = fieldEnd;
      } else {
        lastStateStart = c.at;
        lastStateEnd = fieldEnd;
      }
      c.at = fieldEnd;
    } else if (field === 4 && c.wire === WIRE_VARINT) {
      ready = c.bool(end);
    } else if (field === 5 && c.wire === WIRE_VARINT) restartCount = int32(end);
    else c.skip(end);
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
// sent twice counts once, the last time, as Go reads it.
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
  while (c.at < end) {
    const field = c.tag(end);
    if (c.wire !== WIRE_LENGTH_DELIMITED) {
      c.skip(end);
      continue;
    }
    const fieldEnd = c.spanEnd(end);
    const target = fields[field];
    if (typeof target === 'number') keep(target, c.at, fieldEnd);
    else if (target !== undefined) target.push(c.at, fieldEnd);
    c.at = fieldEnd;
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
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (c.wire !== WIRE_LENGTH_DELIMITED || field < 1 || field > 3) {
      c.skip(end);
      continue;
    }
    const fieldEnd = c.spanEnd(end);
    walkFields(fieldEnd, field === 1 ? METADATA : field === 2 ? SPEC : STATUS);
    c.at = fieldEnd;
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

/** The transcoder refused a pod: what it read of its identity, and why (a `MalformedPodError`). */
export class RefusedPodError extends MalformedPodError {
  constructor(
    message: string,
    /** Name, namespace and version as read (`''` when absent): to name the pod, move a cursor. */
    readonly identity: PodIdentity,
  ) {
    super(message);
  }
}

/**
 * Why protobuf gives no pod for these identity fields, or undefined when it does: in the words of
 * the JSON schema (../../model/pod.ts), since protobuf cannot tell an empty string from an absent
 * one and JSON leaves the absent one out.
 */
function refusal(identity: PodIdentity): string | undefined {
  const issues: string[] = [];
  if (identity.name === '')
    issues.push('metadata.name: Invalid input: expected string, received undefined');
  if (identity.uid === '')
    issues.push('metadata.uid: Invalid input: expected string, received undefined');
  return issues.length > 0 ? `malformed pod: ${issues.join('; ')}` : undefined;
}

/** The identity fields `walkPod` found, as strings. */
function identityOfWalk(): PodIdentity {
  return {
    name: stringAt(single[S_NAME] as number, single[S_NAME + 1] as number),
    namespace: stringAt(single[S_NAMESPACE] as number, single[S_NAMESPACE + 1] as number),
    uid: stringAt(single[S_UID] as number, single[S_UID + 1] as number),
    resourceVersion: stringAt(
      single[S_RESOURCE_VERSION] as number,
      single[S_RESOURCE_VERSION + 1] as number,
    ),
  };
}

/**
 * Appends the JSON of the Pod message at `[start, end)` of `source` to `out` and answers its
 * identity. Throws, with `out` as it was: `RefusedPodError` for a pod the schema would refuse (no
 * name or no uid), naming the field; `ProtobufDecodeError` for bytes that are not protobuf (or a
 * time no date holds), saying what broke.
 */
export function transcodeProtobufPod(
  source: Uint8Array,
  start: number,
  end: number,
  out: JsonBuffer,
): PodIdentity {
  const mark = out.length;
  c.bytes = source;
  try {
    walkPod(start, end);
    const identity = identityOfWalk();
    // Written even when refused: bytes that are not protobuf (a time no date holds) say so first.
    writePod(out);
    const refused = refusal(identity);
    if (refused !== undefined) throw new RefusedPodError(refused, identity);
    return identity;
  } catch (error) {
    out.length = mark;
    throw error;
  } finally {
    c.bytes = EMPTY;
  }
}

/**
 * The metadata of a Pod message that is not a change to apply (a BOOKMARK's object, whose
 * version moves the cursor and whose annotations may end a watch-list's initial events) in its
 * JSON shape: `resourceVersion` when set, `annotations` as sent. Throws `ProtobufDecodeError` for
 * bytes that are not protobuf.
 */
export function protobufPodMetadata(
  source: Uint8Array,
  start: number,
  end: number,
): { resourceVersion?: string; annotations: Record<string, string> } {
  c.bytes = source;
  try {
    walkPod(start, end);
    const { resourceVersion } = identityOfWalk();
    const read: Record<string, string> = {};
    for (let index = 0; index < annotations.length; index += 2) {
      c.at = annotations.at[index] as number;
      mapEntry(annotations.at[index + 1] as number);
      read[stringAt(keyStart, keyEnd)] = stringAt(valueStart, valueEnd);
    }
    return resourceVersion === '' ? { annotations: read } : { resourceVersion, annotations: read };
  } finally {
    c.bytes = EMPTY;
  }
}

const EMPTY = new Uint8Array(0);
