/**
 * The hop's encoding: pods and change events written as JSON bytes straight from their fields,
 * into one buffer per message, for the main thread's `JSON.parse` (../reflector-worker/protocol.ts
 * says why JSON). The output is byte for byte what `TextEncoder.encode(JSON.stringify(value))`
 * gives for a `Pod` built by the model (same keys, same order, same escapes), without the UTF-16
 * string in between: the writer knows the `Pod`'s shape, so it walks no property lists, and an
 * ASCII string (nearly every string a pod carries) is copied a code unit to a byte.
 *
 * Why not `JSON.stringify`: it built a string of the whole chunk (~400 KB for 250 pods) that
 * `TextEncoder` then copied again; together they were the third-largest cost of a sync in the
 * worker thread after decoding and garbage collection.
 *
 * Size: one writer for the `Pod` shape and the two messages built from it (a chunk of pods, a
 * batch of change events), over one buffer type that ./protobuf-pod-json.ts writes into too.
 */
import {
  boundAnnotation,
  type Container,
  type ContainerState,
  type ContainerStatus,
  type Pod,
  type PodCondition,
  type PodWire,
} from '../../model/pod.js';
import type { SourceEvent } from '../../runtime/source-event.js';

const encoder = new TextEncoder();

/** The JSON escape of each ASCII code unit that needs one, as `JSON.stringify` writes it. */
export const JSON_ESCAPES: ReadonlyArray<Uint8Array | undefined> = Array.from(
  { length: 0x80 },
  (_, code) =>
    code < 0x20 || code === 0x22 || code === 0x5c
      ? encoder.encode(JSON.stringify(String.fromCharCode(code)).slice(1, -1))
      : undefined,
);

/** Room a writer starts with; it doubles as needed, and each message takes a copy of its part. */
const INITIAL_CAPACITY = 64 * 1024;
/**
 * Past this, the buffer a large message grew is dropped once the message is taken: a burst of
 * pods with large annotations must not pin megabytes in the worker for good. A 250-pod chunk of
 * engine pods (~375 KB) stays under it.
 */
const MAX_RETAINED_CAPACITY = 1024 * 1024;

/** Up to this many bytes, a loop copies faster than `set` (a key, a punctuation mark). */
const RAW_LOOP_MAX = 32;

/** A growable byte buffer of JSON text: what every writer of the hop's bytes writes into. */
export class JsonBuffer {
  bytes: Uint8Array;
  length = 0;
  readonly #capacity: number;

  constructor(capacity = INITIAL_CAPACITY) {
    this.#capacity = capacity;
    this.bytes = new Uint8Array(capacity);
  }

  /**
   * Leaves what was written to whoever holds views of it, and starts on a fresh buffer: the old
   * one is never written again.
   */
  detach(): void {
    this.bytes = new Uint8Array(this.#capacity);
    this.length = 0;
  }

  reserve(count: number): void {
    if (this.length + count <= this.bytes.length) return;
    let capacity = this.bytes.length * 2;
    while (capacity < this.length + count) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  /** Bytes known to be JSON already (punctuation and keys, encoded once at load; a pod's JSON). */
  raw(token: Uint8Array): void {
    this.reserve(token.length);
    const { bytes } = this;
    let at = this.length;
    if (token.length > RAW_LOOP_MAX) {
      bytes.set(token, at);
      at += token.length;
    } else {
      for (let index = 0; index < token.length; index += 1) bytes[at++] = token[index] as number;
    }
    this.length = at;
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.length++] = value;
  }

  /** A JSON string. ASCII is copied as is (escaped where JSON needs it); anything else is rare
   * enough to go through `JSON.stringify`, which also settles lone surrogates as it does. */
  string(value: string): void {
    const count = value.length;
    this.reserve(count * 6 + 2);
    const { bytes } = this;
    const start = this.length;
    let at = start;
    bytes[at++] = 0x22;
    for (let index = 0; index < count; index += 1) {
      const code = value.charCodeAt(index);
      if (code >= 0x80) {
        this.length = start;
        this.#stringified(value);
        return;
      }
      const escaped = JSON_ESCAPES[code];
      if (escaped === undefined) {
        bytes[at++] = code;
      } else {
        for (let e = 0; e < escaped.length; e += 1) bytes[at++] = escaped[e] as number;
      }
    }
    bytes[at++] = 0x22;
    this.length = at;
  }

  /**
   * The JSON string of ASCII text already in bytes (`[start, end)`, no byte past 0x7f), escaped as
   * `string` escapes the same text: for a reader of bytes (./protobuf-pod-json.ts), so that text
   * with a quote or a control character in it is not decoded into a string only to be escaped.
   * Its loop repeats `string`'s on purpose: a shared per-character helper measured 3–18 % slower
   * per string in `string`, the JSON source's hottest loop.
   */
  asciiString(source: Uint8Array, start: number, end: number): void {
    this.reserve((end - start) * 6 + 2);
    const { bytes } = this;
    let at = this.length;
    bytes[at++] = 0x22;
    for (let index = start; index < end; index += 1) {
      const code = source[index] as number;
      const escaped = JSON_ESCAPES[code];
      if (escaped === undefined) {
        bytes[at++] = code;
      } else {
        for (let e = 0; e < escaped.length; e += 1) bytes[at++] = escaped[e] as number;
      }
    }
    bytes[at++] = 0x22;
    this.length = at;
  }

  #stringified(value: string): void {
    const text = JSON.stringify(value);
    // UTF-8 takes at most three bytes per UTF-16 code unit.
    this.reserve(text.length * 3);
    const { written } = encoder.encodeInto(text, this.bytes.subarray(this.length));
    this.length += written;
  }

  number(value: number): void {
    // The model's numbers are ports, counts and exit codes: integers. Anything else as JSON has it.
    if (Number.isInteger(value) && Math.abs(value) < 2 ** 31) {
      if (value < 0) {
        this.byte(0x2d);
        value = -value;
      }
      if (value < 10) {
        this.byte(0x30 + value);
        return;
      }
      const digits = String(value);
      this.reserve(digits.length);
      for (let index = 0; index < digits.length; index += 1)
        this.bytes[this.length++] = digits.charCodeAt(index);
      return;
    }
    this.raw(encoder.encode(JSON.stringify(value)));
  }

  boolean(value: boolean): void {
    this.raw(value ? TRUE : FALSE);
  }

  /** A copy of what was written, in an `ArrayBuffer` of its own (to transfer); then empty. */
  take(): Uint8Array {
    const out = this.bytes.slice(0, this.length);
    this.length = 0;
    if (this.bytes.length > MAX_RETAINED_CAPACITY) this.bytes = new Uint8Array(INITIAL_CAPACITY);
    return out;
  }
}

/** `"key":` as bytes, and the same after a comma. */
function key(name: string): { first: Uint8Array; next: Uint8Array } {
  return { first: encoder.encode(`"${name}":`), next: encoder.encode(`,"${name}":`) };
}

const TRUE = encoder.encode('true');
const FALSE = encoder.encode('false');
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Every key a `Pod` or a change event has, as `"key":` and `,"key":` bytes. */
export const JSON_KEYS = {
  metadata: key('metadata'),
  spec: key('spec'),
  status: key('status'),
  name: key('name'),
  namespace: key('namespace'),
  uid: key('uid'),
  resourceVersion: key('resourceVersion'),
  creationTimestamp: key('creationTimestamp'),
  deletionTimestamp: key('deletionTimestamp'),
  labels: key('labels'),
  annotations: key('annotations'),
  ownerReferences: key('ownerReferences'),
  kind: key('kind'),
  controller: key('controller'),
  nodeName: key('nodeName'),
  subdomain: key('subdomain'),
  nodeSelector: key('nodeSelector'),
  schedulingGates: key('schedulingGates'),
  readinessGates: key('readinessGates'),
  conditionType: key('conditionType'),
  containers: key('containers'),
  ports: key('ports'),
  containerPort: key('containerPort'),
  protocol: key('protocol'),
  phase: key('phase'),
  podIP: key('podIP'),
  conditions: key('conditions'),
  containerStatuses: key('containerStatuses'),
  type: key('type'),
  reason: key('reason'),
  message: key('message'),
  lastTransitionTime: key('lastTransitionTime'),
  ready: key('ready'),
  restartCount: key('restartCount'),
  state: key('state'),
  lastState: key('lastState'),
  waiting: key('waiting'),
  running: key('running'),
  terminated: key('terminated'),
  startedAt: key('startedAt'),
  finishedAt: key('finishedAt'),
  exitCode: key('exitCode'),
  key: key('key'),
  object: key('object'),
  lastObject: key('lastObject'),
} as const;

type Key = (typeof JSON_KEYS)[keyof typeof JSON_KEYS];
const K = JSON_KEYS;

/**
 * Writes an object's fields in order: `field` for one that is present, `optional` skips an
 * absent one, as `JSON.stringify` leaves out `undefined`.
 */
class Fields {
  #first = true;
  constructor(readonly out: JsonBuffer) {
    out.byte(OPEN_BRACE);
  }

  name(name: Key): JsonBuffer {
    this.out.raw(this.#first ? name.first : name.next);
    this.#first = false;
    return this.out;
  }

  string(name: Key, value: string | undefined): void {
    if (value !== undefined) this.name(name).string(value);
  }

  end(): void {
    this.out.byte(CLOSE_BRACE);
  }
}

function writeStringMap(out: JsonBuffer, map: Readonly<Record<string, string>>): void {
  out.byte(OPEN_BRACE);
  let first = true;
  for (const name in map) {
    const value = map[name];
    if (value === undefined) continue;
    if (!first) out.byte(COMMA);
    first = false;
    out.string(name);
    out.byte(COLON);
    out.string(value);
  }
  out.byte(CLOSE_BRACE);
}

function writeList<T>(
  out: JsonBuffer,
  items: readonly T[],
  write: (out: JsonBuffer, item: T) => void,
) {
  out.byte(OPEN_BRACKET);
  for (let index = 0; index < items.length; index += 1) {
    if (index > 0) out.byte(COMMA);
    write(out, items[index] as T);
  }
  out.byte(CLOSE_BRACKET);
}

function writeContainer(out: JsonBuffer, container: Container): void {
  const fields = new Fields(out);
  fields.string(K.name, container.name);
  writeList(fields.name(K.ports), container.ports, (o, port) => {
    const portFields = new Fields(o);
    portFields.string(K.name, port.name);
    portFields.name(K.containerPort).number(port.containerPort);
    portFields.string(K.protocol, port.protocol);
    portFields.end();
  });
  fields.end();
}

function writeCondition(out: JsonBuffer, condition: PodCondition): void {
  const fields = new Fields(out);
  fields.string(K.type, condition.type);
  fields.string(K.status, condition.status);
  fields.string(K.reason, condition.reason);
  fields.string(K.message, condition.message);
  fields.string(K.lastTransitionTime, condition.lastTransitionTime);
  fields.end();
}

function writeState(out: JsonBuffer, state: ContainerState): void {
  const fields = new Fields(out);
  if (state.waiting) {
    const waiting = new Fields(fields.name(K.waiting));
    waiting.string(K.reason, state.waiting.reason);
    waiting.string(K.message, state.waiting.message);
    waiting.end();
  }
  if (state.running) {
    const running = new Fields(fields.name(K.running));
    running.string(K.startedAt, state.running.startedAt);
    running.end();
  }
  if (state.terminated) {
    const terminated = new Fields(fields.name(K.terminated));
    terminated.name(K.exitCode).number(state.terminated.exitCode);
    terminated.string(K.reason, state.terminated.reason);
    terminated.string(K.message, state.terminated.message);
    terminated.string(K.startedAt, state.terminated.startedAt);
    terminated.string(K.finishedAt, state.terminated.finishedAt);
    terminated.end();
  }
  fields.end();
}

function writeContainerStatus(out: JsonBuffer, status: ContainerStatus): void {
  const fields = new Fields(out);
  fields.string(K.name, status.name);
  fields.name(K.ready).boolean(status.ready);
  fields.name(K.restartCount).number(status.restartCount);
  if (status.state) writeState(fields.name(K.state), status.state);
  if (status.lastState) writeState(fields.name(K.lastState), status.lastState);
  fields.end();
}

function writePod(out: JsonBuffer, pod: Pod): void {
  const { metadata, spec, status } = pod;
  const fields = new Fields(out);
  const meta = new Fields(fields.name(K.metadata));
  meta.string(K.name, metadata.name);
  meta.string(K.namespace, metadata.namespace);
  meta.string(K.uid, metadata.uid);
  meta.string(K.resourceVersion, metadata.resourceVersion);
  meta.string(K.creationTimestamp, metadata.creationTimestamp);
  meta.string(K.deletionTimestamp, metadata.deletionTimestamp);
  writeStringMap(meta.name(K.labels), metadata.labels);
  writeStringMap(meta.name(K.annotations), metadata.annotations);
  if (metadata.ownerReferences) {
    writeList(meta.name(K.ownerReferences), metadata.ownerReferences, (o, reference) => {
      const referenceFields = new Fields(o);
      referenceFields.string(K.kind, reference.kind);
      referenceFields.string(K.name, reference.name);
      referenceFields.string(K.uid, reference.uid);
      if (reference.controller) referenceFields.name(K.controller).boolean(true);
      referenceFields.end();
    });
  }
  meta.end();
  const specFields = new Fields(fields.name(K.spec));
  specFields.string(K.nodeName, spec.nodeName);
  specFields.string(K.subdomain, spec.subdomain);
  writeStringMap(specFields.name(K.nodeSelector), spec.nodeSelector);
  writeList(specFields.name(K.schedulingGates), spec.schedulingGates, (o, gate) => {
    const gateFields = new Fields(o);
    gateFields.string(K.name, gate.name);
    gateFields.end();
  });
  if (spec.readinessGates) {
    writeList(specFields.name(K.readinessGates), spec.readinessGates, (o, gate) => {
      const gateFields = new Fields(o);
      gateFields.string(K.conditionType, gate.conditionType);
      gateFields.end();
    });
  }
  writeList(specFields.name(K.containers), spec.containers, writeContainer);
  specFields.end();
  const statusFields = new Fields(fields.name(K.status));
  statusFields.string(K.phase, status.phase);
  statusFields.string(K.podIP, status.podIP);
  writeList(statusFields.name(K.conditions), status.conditions, writeCondition);
  writeList(statusFields.name(K.containerStatuses), status.containerStatuses, writeContainerStatus);
  statusFields.end();
  fields.end();
}

/** The JSON of one `Pod`, appended to `out` (an `EncodedPod` is written this way from a JSON pod). */
export function writePodJson(out: JsonBuffer, pod: Pod): void {
  writePod(out, pod);
}

type Text = string | null | undefined;

/** A field of the wire that `parsePod` keeps only when it is a string (`null` and absent: left out). */
function text(fields: Fields, name: Key, value: Text): void {
  if (typeof value === 'string') fields.name(name).string(value);
}

/** A string map of the wire (`null` or absent: `{}`), its values cut by `bound` when given. */
function writeWireStringMap(
  out: JsonBuffer,
  map: Readonly<Record<string, string>> | null | undefined,
  bound?: (value: string) => string,
): void {
  if (!map) {
    out.byte(OPEN_BRACE);
    out.byte(CLOSE_BRACE);
    return;
  }
  if (!bound) {
    writeStringMap(out, map);
    return;
  }
  out.byte(OPEN_BRACE);
  let first = true;
  for (const name in map) {
    if (!first) out.byte(COMMA);
    first = false;
    out.string(name);
    out.byte(COLON);
    out.string(bound(map[name] as string));
  }
  out.byte(CLOSE_BRACE);
}

/** A list of the wire (`null` or absent: `[]`). */
function writeWireList<T>(
  out: JsonBuffer,
  items: readonly T[] | null | undefined,
  write: (out: JsonBuffer, item: T) => void,
): void {
  writeList(out, items ?? [], write);
}

type WireSpec = NonNullable<PodWire['spec']>;
type WireStatus = NonNullable<PodWire['status']>;
type WireContainer = NonNullable<WireSpec['containers']>[number];
type WireCondition = NonNullable<WireStatus['conditions']>[number];
type WireContainerStatus = NonNullable<WireStatus['containerStatuses']>[number];
type WireState = WireContainerStatus['state'];

function writeWireContainer(out: JsonBuffer, container: WireContainer): void {
  const fields = new Fields(out);
  fields.string(K.name, container.name);
  writeWireList(fields.name(K.ports), container.ports, (o, port) => {
    const portFields = new Fields(o);
    text(portFields, K.name, port.name);
    portFields.name(K.containerPort).number(port.containerPort);
    text(portFields, K.protocol, port.protocol);
    portFields.end();
  });
  fields.end();
}

function writeWireCondition(out: JsonBuffer, condition: WireCondition): void {
  const fields = new Fields(out);
  fields.string(K.type, condition.type);
  fields.string(K.status, condition.status);
  text(fields, K.reason, condition.reason);
  text(fields, K.message, condition.message);
  text(fields, K.lastTransitionTime, condition.lastTransitionTime);
  fields.end();
}

function writeWireState(fields: Fields, name: Key, state: WireState): void {
  if (!state) return;
  const stateFields = new Fields(fields.name(name));
  if (state.waiting) {
    const waiting = new Fields(stateFields.name(K.waiting));
    text(waiting, K.reason, state.waiting.reason);
    text(waiting, K.message, state.waiting.message);
    waiting.end();
  }
  if (state.running) {
    const running = new Fields(stateFields.name(K.running));
    text(running, K.startedAt, state.running.startedAt);
    running.end();
  }
  if (state.terminated) {
    const terminated = new Fields(stateFields.name(K.terminated));
    terminated.name(K.exitCode).number(state.terminated.exitCode);
    text(terminated, K.reason, state.terminated.reason);
    text(terminated, K.message, state.terminated.message);
    text(terminated, K.startedAt, state.terminated.startedAt);
    text(terminated, K.finishedAt, state.terminated.finishedAt);
    terminated.end();
  }
  stateFields.end();
}

function writeWireContainerStatus(out: JsonBuffer, status: WireContainerStatus): void {
  const fields = new Fields(out);
  fields.string(K.name, status.name);
  fields.name(K.ready).boolean(status.ready ?? false);
  fields.name(K.restartCount).number(status.restartCount);
  writeWireState(fields, K.state, status.state);
  writeWireState(fields, K.lastState, status.lastState);
  fields.end();
}

/**
 * The JSON of the `Pod` that `parsePod(wire)` returns, byte for byte, written straight from a
 * value `conformsToPodWire` accepted, appended to `out`. A watch event's or a LIST item's pod
 * from JSON was first shaped into a `Pod` (every kept field copied into new objects) and then
 * written; in the worker's profile of a 1,000-event burst that shaping and its garbage were a
 * fifth of the thread's time per event. Kept in step with `writePod` and `parsePod`'s `shape`
 * (test/kubernetes/pod-json-writer.test.ts compares the bytes).
 */
export function writeWirePodJson(out: JsonBuffer, wire: PodWire): void {
  const { metadata } = wire;
  const fields = new Fields(out);
  const meta = new Fields(fields.name(K.metadata));
  meta.string(K.name, metadata.name);
  meta.string(K.namespace, metadata.namespace ?? '');
  meta.string(K.uid, metadata.uid);
  text(meta, K.resourceVersion, metadata.resourceVersion);
  text(meta, K.creationTimestamp, metadata.creationTimestamp);
  text(meta, K.deletionTimestamp, metadata.deletionTimestamp);
  writeWireStringMap(meta.name(K.labels), metadata.labels);
  writeWireStringMap(meta.name(K.annotations), metadata.annotations, boundAnnotation);
  if (metadata.ownerReferences && metadata.ownerReferences.length > 0) {
    writeList(meta.name(K.ownerReferences), metadata.ownerReferences, (o, reference) => {
      const referenceFields = new Fields(o);
      referenceFields.string(K.kind, reference.kind ?? '');
      referenceFields.string(K.name, reference.name ?? '');
      referenceFields.string(K.uid, reference.uid ?? '');
      if (reference.controller === true) referenceFields.name(K.controller).boolean(true);
      referenceFields.end();
    });
  }
  meta.end();
  const spec: Partial<WireSpec> = wire.spec ?? {};
  const specFields = new Fields(fields.name(K.spec));
  text(specFields, K.nodeName, spec.nodeName);
  text(specFields, K.subdomain, spec.subdomain);
  writeWireStringMap(specFields.name(K.nodeSelector), spec.nodeSelector);
  writeWireList(specFields.name(K.schedulingGates), spec.schedulingGates, (o, gate) => {
    const gateFields = new Fields(o);
    gateFields.string(K.name, gate.name);
    gateFields.end();
  });
  if (spec.readinessGates && spec.readinessGates.length > 0) {
    writeList(specFields.name(K.readinessGates), spec.readinessGates, (o, gate) => {
      const gateFields = new Fields(o);
      gateFields.string(K.conditionType, gate.conditionType ?? '');
      gateFields.end();
    });
  }
  writeWireList(specFields.name(K.containers), spec.containers, writeWireContainer);
  specFields.end();
  const status: Partial<WireStatus> = wire.status ?? {};
  const statusFields = new Fields(fields.name(K.status));
  text(statusFields, K.phase, status.phase);
  text(statusFields, K.podIP, status.podIP);
  writeWireList(statusFields.name(K.conditions), status.conditions, writeWireCondition);
  writeWireList(
    statusFields.name(K.containerStatuses),
    status.containerStatuses,
    writeWireContainerStatus,
  );
  statusFields.end();
  fields.end();
}

/** One writer per thread, reused: messages are written one at a time. */
const shared = new JsonBuffer();

/** `pods` as the JSON of `Pod[]`, in a buffer of its own (to transfer). */
export function writePodsJson(pods: readonly Pod[]): Uint8Array {
  shared.length = 0;
  writeList(shared, pods, writePod);
  return shared.take();
}

/**
 * A pod already written as JSON (./encoded-pod.ts's `EncodedPod`, named by its shape alone so the
 * writer needs nothing of the module that uses it).
 */
interface WrittenPod {
  readonly json: Uint8Array;
}

/** `pods`, already JSON each, as the JSON of `Pod[]`, in a buffer of its own (to transfer). */
export function writeEncodedPodsJson(pods: readonly WrittenPod[]): Uint8Array {
  let length = 2 + Math.max(0, pods.length - 1);
  for (const pod of pods) length += pod.json.length;
  const out = new Uint8Array(length);
  let at = 0;
  out[at++] = OPEN_BRACKET;
  for (let index = 0; index < pods.length; index += 1) {
    if (index > 0) out[at++] = COMMA;
    const json = (pods[index] as WrittenPod).json;
    out.set(json, at);
    at += json.length;
  }
  out[at++] = CLOSE_BRACKET;
  return out;
}

/** A watch change of a pod already written as JSON (an `EncodedPod`'s). */
type WrittenChange = Exclude<SourceEvent<WrittenPod>, { type: 'replace' }>;

function writeEvent(out: JsonBuffer, event: WrittenChange): void {
  const fields = new Fields(out);
  fields.string(K.type, event.type);
  fields.string(K.key, event.key);
  if (event.type === 'upsert') fields.name(K.object).raw(event.object.json);
  else if (event.lastObject) fields.name(K.lastObject).raw(event.lastObject.json);
  fields.end();
}

/**
 * `events` as the JSON of the main side's `ChangeEvent[]` (each pod's JSON as it is), in a buffer
 * of its own (to transfer).
 */
export function writeChangeEventsJson(events: readonly WrittenChange[]): Uint8Array {
  shared.length = 0;
  writeList(shared, events, writeEvent);
  return shared.take();
}
