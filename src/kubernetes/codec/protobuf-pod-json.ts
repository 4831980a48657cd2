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
import { writeRfc3339Seconds } from './protobuf-time.js';

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

/**
 * Up to this many bytes a string is copied by a loop, past it by `set` on a view: a view is an
 * object to collect, and label keys (`leaderworkerset.sigs.k8s.io/template-revision-hash`, 50
 * bytes) are past 32, where this stood while views of them were a seventh of the bytes a
 * watch-list of engine pods allocated.
 */
const COPY_LOOP_MAX_BYTES = 64;

/** The JSON string of the UTF-8 text at `[start, end)`, as the writer writes the decoded text. */
function copyString(out: JsonBuffer, start: number, end: number): void {
  const bytes = c.bytes;
  let firstSpecial = start;
  while (firstSpecial < end && BYTE_CLASS[bytes[firstSpecial] as number] === 0) firstSpecial += 1;
  if (firstSpecial === end) {
    // Nearly every string of a pod: quotes around the bytes as they are.
    const length = end - start;
    out.reserve(length + 2);
    const target = out.bytes;
    let to = out.length;
    target[to++] = 0x22;
    if (length > COPY_LOOP_MAX_BYTES) target.set(bytes.subarray(start, end), to);
    else
      for (let index = start; index < end; index += 1)
        target[to + index - start] = bytes[index] as number;
    to += length;
    target[to++] = 0x22;
    out.length = to;
    return;
  }
  for (let index = firstSpecial; index < end; index += 1) {
    if (BYTE_CLASS[bytes[index] as number] === 2) {
      // Text that is not ASCII (decoded first: invalid sequences become U+FFFD, as Go's JSON
      // writes them): written as the writer writes any string.
      out.string(decodeUtf8(bytes, start, end));
      return;
    }
  }
  // ASCII with characters JSON escapes (an annotation holding JSON, say: quotes), escaped from
  // the bytes: decoding it into a string first, to escape that, was the second-largest
  // allocation of a watch-list of engine pods.
  out.asciiString(bytes, start, end);
}

/** `"key":` after a comma unless it is the object's first. */
function name(out: JsonBuffer, key: { first: Uint8Array; next: Uint8Array }, first: boolean): void {
  out.raw(first ? key.first : key.next);
}

/**
 * The fields of one message type that its writer reads, by field number (1 to `lastField`): the
 * last span of each length-delimited one (start -1 when absent) and the last value of each varint
 * one (0 when absent), as Go reads a field sent twice; and, for a type with one, every span of its
 * repeated field in order. A writer reads its message into its type's table, then writes from it;
 * no message type nests itself, so a nested writer, reading into its own type's table, leaves its
 * parent's intact. A field sent with another wire type than its writer reads stays absent, as
 * protobuf skips it; every field past `lastField` is stepped over.
 */
class MessageFields {
  readonly #lastField: number;
  readonly #repeatedField: number;
  // Plain arrays of small integers, reset by a loop: for the few fields of a message, cheaper
  // than typed arrays and their `fill`.
  readonly #starts: number[];
  readonly #ends: number[];
  /** A varint's low and high 32 bits (unsigned), as `WireCursor.varint` leaves them. */
  readonly #lows: number[];
  readonly #highs: number[];
  /** The spans of field `repeatedField`, in wire order (none when it is 0). */
  readonly repeated = new Spans();

  constructor(lastField: number, repeatedField = 0) {
    this.#lastField = lastField;
    this.#repeatedField = repeatedField;
    this.#starts = new Array<number>(lastField + 1).fill(-1);
    this.#ends = new Array<number>(lastField + 1).fill(-1);
    this.#lows = new Array<number>(lastField + 1).fill(0);
    this.#highs = new Array<number>(lastField + 1).fill(0);
  }

  /** Reads the message at `[start, end)`. */
  read(start: number, end: number): void {
    const starts = this.#starts;
    const lows = this.#lows;
    const highs = this.#highs;
    for (let field = 1; field <= this.#lastField; field += 1) {
      starts[field] = -1;
      lows[field] = 0;
      highs[field] = 0;
    }
    this.repeated.length = 0;
    c.at = start;
    while (c.at < end) {
      const field = c.tag(end);
      if (field > this.#lastField) c.skip(end);
      else if (c.wire === WIRE_LENGTH_DELIMITED) {
        const fieldEnd = c.spanEnd(end);
        if (field === this.#repeatedField) this.repeated.push(c.at, fieldEnd);
        else {
          starts[field] = c.at;
          this.#ends[field] = fieldEnd;
        }
        c.at = fieldEnd;
      } else if (c.wire === WIRE_VARINT) {
        lows[field] = c.varint(end);
        highs[field] = c.high;
      } else c.skip(end);
    }
  }

  /** Where length-delimited field `field` starts, -1 when absent. */
  start(field: number): number {
    return this.#starts[field] as number;
  }

  /** Where it ends (meaningful when it is present). */
  end(field: number): number {
    return this.#ends[field] as number;
  }

  /** Varint field `field` as an `int32`, two's complement. */
  int32(field: number): number {
    return (this.#lows[field] as number) | 0;
  }

  /** Varint field `field` as a `bool`: anything but zero is true. */
  bool(field: number): boolean {
    return this.#lows[field] !== 0 || this.#highs[field] !== 0;
  }
}

/** Field `field` as a JSON string, `""` when absent (a string whose JSON tag has no omitempty). */
function stringField(out: JsonBuffer, fields: MessageFields, field: number): void {
  const start = fields.start(field);
  if (start < 0) out.raw(EMPTY_STRING);
  else copyString(out, start, fields.end(field));
}

/** The seconds (field 1) of the `metav1.Time` message at `[start, end)`; 0 when absent. */
function secondsAt(start: number, end: number): number {
  let seconds = 0;
  c.at = start;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === 1 && c.wire === WIRE_VARINT) seconds = c.int64(end);
    else c.skip(end);
  }
  return seconds;
}

// The key and value spans of the map entry `mapEntry` read last; -1 when absent. Written out by
// hand rather than read into a MessageFields: it runs for every label and annotation, the most
// frequent message of a pod, and resetting a table per entry measured slower than four locals.
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
  // An empty message is a zero time, which JSON leaves out (`null`, absent); else RFC 3339.
  if (start < 0 || start >= end) return first;
  const seconds = secondsAt(start, end);
  name(out, key, first);
  writeRfc3339Seconds(out, seconds);
  return false;
}

/** `Container`: name 1, ports 6 (repeated). */
const CONTAINER = new MessageFields(6, 6);

function writeContainer(out: JsonBuffer, start: number, end: number): void {
  CONTAINER.read(start, end);
  out.byte(0x7b);
  name(out, K.name, true);
  stringField(out, CONTAINER, 1);
  name(out, K.ports, false);
  writeMessages(out, CONTAINER.repeated, writePort);
  out.byte(0x7d);
}

/** `ContainerPort`: name 1, containerPort 3 (varint), protocol 4. */
const PORT = new MessageFields(4);

function writePort(out: JsonBuffer, start: number, end: number): void {
  PORT.read(start, end);
  out.byte(0x7b);
  const first = optionalString(out, K.name, PORT.start(1), PORT.end(1), true);
  name(out, K.containerPort, first);
  out.number(PORT.int32(3));
  optionalString(out, K.protocol, PORT.start(4), PORT.end(4), false);
  out.byte(0x7d);
}

/** `OwnerReference`: kind 1, name 3, uid 4, controller 6 (varint; written only when true). */
const OWNER_REFERENCE = new MessageFields(6);

function writeOwnerReference(out: JsonBuffer, start: number, end: number): void {
  OWNER_REFERENCE.read(start, end);
  out.byte(0x7b);
  name(out, K.kind, true);
  stringField(out, OWNER_REFERENCE, 1);
  name(out, K.name, false);
  stringField(out, OWNER_REFERENCE, 3);
  name(out, K.uid, false);
  stringField(out, OWNER_REFERENCE, 4);
  if (OWNER_REFERENCE.bool(6)) {
    name(out, K.controller, false);
    out.boolean(true);
  }
  out.byte(0x7d);
}

/** `PodCondition`: type 1, status 2, lastTransitionTime 4, reason 5, message 6. */
const CONDITION = new MessageFields(6);

function writeCondition(out: JsonBuffer, start: number, end: number): void {
  const f = CONDITION;
  f.read(start, end);
  out.byte(0x7b);
  name(out, K.type, true);
  stringField(out, f, 1);
  name(out, K.status, false);
  stringField(out, f, 2);
  optionalString(out, K.reason, f.start(5), f.end(5), false);
  optionalString(out, K.message, f.start(6), f.end(6), false);
  optionalTime(out, K.lastTransitionTime, f.start(4), f.end(4), false);
  out.byte(0x7d);
}

/** `ContainerStateWaiting`: reason 1, message 2. */
const WAITING = new MessageFields(2);

function writeWaiting(out: JsonBuffer, start: number, end: number): void {
  WAITING.read(start, end);
  out.byte(0x7b);
  const first = optionalString(out, K.reason, WAITING.start(1), WAITING.end(1), true);
  optionalString(out, K.message, WAITING.start(2), WAITING.end(2), first);
  out.byte(0x7d);
}

/** `ContainerStateRunning`: startedAt 1, its only field. */
const RUNNING = new MessageFields(1);

function writeRunning(out: JsonBuffer, start: number, end: number): void {
  RUNNING.read(start, end);
  out.byte(0x7b);
  optionalTime(out, K.startedAt, RUNNING.start(1), RUNNING.end(1), true);
  out.byte(0x7d);
}

/** `ContainerStateTerminated`: exitCode 1 (varint), reason 3, message 4, startedAt 5, finishedAt 6. */
const TERMINATED = new MessageFields(6);

function writeTerminated(out: JsonBuffer, start: number, end: number): void {
  const f = TERMINATED;
  f.read(start, end);
  out.byte(0x7b);
  name(out, K.exitCode, true);
  out.number(f.int32(1));
  optionalString(out, K.reason, f.start(3), f.end(3), false);
  optionalString(out, K.message, f.start(4), f.end(4), false);
  optionalTime(out, K.startedAt, f.start(5), f.end(5), false);
  optionalTime(out, K.finishedAt, f.start(6), f.end(6), false);
  out.byte(0x7d);
}

/** `ContainerState`: waiting 1, running 2, terminated 3, each written when sent. */
const STATE = new MessageFields(3);

function writeState(out: JsonBuffer, start: number, end: number): void {
  STATE.read(start, end);
  const waiting = STATE.start(1);
  const running = STATE.start(2);
  const terminated = STATE.start(3);
  out.byte(0x7b);
  let first = true;
  if (waiting >= 0) {
    name(out, K.waiting, first);
    writeWaiting(out, waiting, STATE.end(1));
    first = false;
  }
  if (running >= 0) {
    name(out, K.running, first);
    writeRunning(out, running, STATE.end(2));
    first = false;
  }
  if (terminated >= 0) {
    name(out, K.terminated, first);
    writeTerminated(out, terminated, STATE.end(3));
  }
  out.byte(0x7d);
}

/** `ContainerStatus`: name 1, state 2, lastState 3, ready 4 and restartCount 5 (varints). */
const CONTAINER_STATUS = new MessageFields(5);

function writeContainerStatus(out: JsonBuffer, start: number, end: number): void {
  const f = CONTAINER_STATUS;
  f.read(start, end);
  out.byte(0x7b);
  name(out, K.name, true);
  stringField(out, f, 1);
  name(out, K.ready, false);
  out.boolean(f.bool(4));
  name(out, K.restartCount, false);
  out.number(f.int32(5));
  if (f.start(2) >= 0) {
    name(out, K.state, false);
    writeState(out, f.start(2), f.end(2));
  }
  if (f.start(3) >= 0) {
    name(out, K.lastState, false);
    writeState(out, f.start(3), f.end(3));
  }
  out.byte(0x7d);
}

/** `PodSchedulingGate` and `PodReadinessGate`: their one string, field 1. */
const GATE = new MessageFields(1);

/** `{<key>: <string field 1>}` for each span: scheduling and readiness gates. */
function writeGates(
  out: JsonBuffer,
  gates: Spans,
  key: { first: Uint8Array; next: Uint8Array },
): void {
  out.byte(0x5b);
  for (let index = 0; index < gates.length; index += 2) {
    if (index > 0) out.byte(0x2c);
    GATE.read(gates.at[index] as number, gates.at[index + 1] as number);
    out.byte(0x7b);
    name(out, key, true);
    stringField(out, GATE, 1);
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
