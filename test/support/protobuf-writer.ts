/**
 * A protobuf wire-format WRITER for tests, and builders that turn a pod, a pod list, a `Status` or
 * a watch event in the API server's JSON shape into the bytes the API server would send for it
 * with `Accept: application/vnd.kubernetes.protobuf`.
 *
 * Written independently of src/kubernetes/codec/protobuf-reader.ts (it imports nothing from src), so a
 * mistake shared by the reader and this writer cannot hide itself: varints are built with BigInt,
 * and the field numbers below were copied from k8s.io/api core/v1 and k8s.io/apimachinery meta/v1
 * and runtime `generated.proto` (v0.37.2).
 *
 * The builders write the way the API server's gogo-protobuf code does (`style: 'gogo'`, the
 * default): every non-pointer field is written even when it holds its zero value (an empty string,
 * `0`, `false`, an empty message, an empty `metav1.Time`), pointer fields only when set, maps with
 * their keys sorted, fields in ascending field-number order. Options write the same object other
 * legal ways: only the fields the JSON has (`style: 'sparse'`), fields in descending order, and
 * fields no schema knows sprinkled through every message (`unknownFields`).
 */

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LENGTH_DELIMITED = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

const TWO_POW_64 = 1n << 64n;

/**
 * A varint of the 64-bit two's complement of `value`: negative numbers (an `int32` or `int64`
 * below zero) take ten bytes, as Go's `uint64(int32(x))` sign extension writes them.
 */
export function encodeVarint(value: number | bigint): Uint8Array {
  let remaining = BigInt(value);
  if (remaining < 0n) remaining += TWO_POW_64;
  if (remaining < 0n || remaining >= TWO_POW_64) throw new RangeError(`varint out of range`);
  const out: number[] = [];
  while (remaining >= 0x80n) {
    out.push(Number(remaining & 0x7fn) | 0x80);
    remaining >>= 7n;
  }
  out.push(Number(remaining));
  return Uint8Array.from(out);
}

/** A field's tag: `field << 3 | wireType`, as a varint. */
export function encodeTag(field: number, wireType: number): Uint8Array {
  return encodeVarint((BigInt(field) << 3n) | BigInt(wireType));
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const utf8 = new TextEncoder();

/** Appends fields, in the order written, to one message. */
export class ProtoWriter {
  readonly #parts: Uint8Array[] = [];

  /** Bytes as they are, tag and all: for malformed messages. */
  raw(bytes: Uint8Array | readonly number[]): this {
    this.#parts.push(Uint8Array.from(bytes));
    return this;
  }

  /** A varint field (`int32`, `int64`, `uint64`, `bool`, enum); negatives take ten bytes. */
  varint(field: number, value: number | bigint | boolean): this {
    const number = typeof value === 'boolean' ? (value ? 1 : 0) : value;
    return this.raw(concatBytes(encodeTag(field, WIRE_VARINT), encodeVarint(number)));
  }

  fixed32(field: number, value: number): this {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setUint32(0, value >>> 0, true);
    return this.raw(concatBytes(encodeTag(field, WIRE_FIXED32), bytes));
  }

  fixed64(field: number, value: bigint): this {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setBigUint64(0, BigInt.asUintN(64, value), true);
    return this.raw(concatBytes(encodeTag(field, WIRE_FIXED64), bytes));
  }

  bytes(field: number, data: Uint8Array | readonly number[]): this {
    const body = Uint8Array.from(data);
    return this.raw(
      concatBytes(encodeTag(field, WIRE_LENGTH_DELIMITED), encodeVarint(body.length), body),
    );
  }

  string(field: number, text: string): this {
    return this.bytes(field, utf8.encode(text));
  }

  /** A nested message: built by `build`, or given as another writer or its bytes. */
  message(field: number, inner: ProtoWriter | Uint8Array | ((writer: ProtoWriter) => void)): this {
    if (inner instanceof ProtoWriter) return this.bytes(field, inner.finish());
    if (inner instanceof Uint8Array) return this.bytes(field, inner);
    const writer = new ProtoWriter();
    inner(writer);
    return this.bytes(field, writer.finish());
  }

  /** One entry of a `map<string, string>` field: `{1: key, 2: value}`. */
  mapEntry(field: number, key: string, value: string): this {
    return this.message(field, (entry) => entry.string(1, key).string(2, value));
  }

  finish(): Uint8Array {
    return concatBytes(...this.#parts);
  }
}

/** One message's bytes. */
export function message(build: (writer: ProtoWriter) => void): Uint8Array {
  const writer = new ProtoWriter();
  build(writer);
  return writer.finish();
}

/** "k8s\0": the prefix of every protobuf object the API server sends. */
export const K8S_MAGIC = Uint8Array.from([0x6b, 0x38, 0x73, 0x00]);

export interface EnvelopeOptions {
  /** Not "" only for a compressed or otherwise encoded `raw` (never from a real API server). */
  contentEncoding?: string | undefined;
  contentType?: string | undefined;
  /** Instead of "k8s\0". */
  magic?: Uint8Array | undefined;
  /** Fields `runtime.Unknown` does not have, before and after its own. */
  unknownFields?: boolean | undefined;
}

/**
 * "k8s\0" + a `runtime.Unknown` {1: typeMeta {1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding,
 * 4: contentType}, with contentEncoding and contentType written even when empty, as the API
 * server's serializer does.
 */
export function k8sEnvelope(
  typeMeta: { apiVersion: string; kind: string },
  raw: Uint8Array,
  options: EnvelopeOptions = {},
): Uint8Array {
  const unknown = new ProtoWriter();
  if (options.unknownFields) writeUnknownFields(unknown);
  unknown
    .message(1, (meta) => meta.string(1, typeMeta.apiVersion).string(2, typeMeta.kind))
    .bytes(2, raw)
    .string(3, options.contentEncoding ?? '')
    .string(4, options.contentType ?? '');
  if (options.unknownFields) writeUnknownFields(unknown);
  return concatBytes(options.magic ?? K8S_MAGIC, unknown.finish());
}

/** A watch stream frame: a four-byte big-endian length, then the bytes. */
export function lengthPrefixed(frame: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, frame.length, false);
  return concatBytes(prefix, frame);
}

/**
 * Fields no Kubernetes message has (numbers 4000 and up, and the largest legal one), one of each
 * wire type, with values that need long encodings: a reader must skip them all.
 */
export function writeUnknownFields(writer: ProtoWriter): void {
  writer
    .varint(4000, 2n ** 40n)
    .fixed64(4001, 0x0123456789abcdefn)
    .bytes(4002, [0x0a, 0xff, 0x00, 0x80, 0x12])
    .fixed32(4003, 0xdeadbeef)
    .varint(4004, -5)
    .string(536_870_911, 'the largest field number');
}

// ---------------------------------------------------------------------------------------------
// Schemas: the JSON names and field numbers of the messages a pod, a pod list and a Status hold.

type Scalar = 'string' | 'int32' | 'int64' | 'bool';

interface FieldSpec {
  no: number;
  /** A scalar, a `metav1.Time`, a string map, a Quantity map, raw JSON bytes, or a message. */
  type: Scalar | 'time' | 'stringMap' | 'quantityMap' | 'fieldsV1' | 'quantity' | Schema;
  repeated?: boolean;
  /** A Go pointer (or slice/map): written only when set. Non-pointer fields are always written. */
  pointer?: boolean;
  /** An embedded Go struct whose JSON fields sit in the parent's object (`Volume.volumeSource`). */
  inline?: boolean;
}

interface Schema {
  name: string;
  fields: Record<string, FieldSpec>;
}

const schema = (name: string, fields: Record<string, FieldSpec>): Schema => ({ name, fields });
const str = (no: number): FieldSpec => ({ no, type: 'string' });
const int32 = (no: number): FieldSpec => ({ no, type: 'int32' });
const int64 = (no: number): FieldSpec => ({ no, type: 'int64' });
const bool = (no: number): FieldSpec => ({ no, type: 'bool' });
const time = (no: number): FieldSpec => ({ no, type: 'time' });
const ptr = (spec: FieldSpec): FieldSpec => ({ ...spec, pointer: true });
const list = (no: number, type: FieldSpec['type']): FieldSpec => ({ no, type, repeated: true });
const msg = (no: number, type: Schema): FieldSpec => ({ no, type });

// meta/v1
const ownerReference = schema('OwnerReference', {
  kind: str(1),
  name: str(3),
  uid: str(4),
  apiVersion: str(5),
  controller: ptr(bool(6)),
  blockOwnerDeletion: ptr(bool(7)),
});
const managedFieldsEntry = schema('ManagedFieldsEntry', {
  manager: str(1),
  operation: str(2),
  apiVersion: str(3),
  time: ptr(time(4)),
  fieldsType: str(6),
  fieldsV1: { no: 7, type: 'fieldsV1', pointer: true },
  subresource: str(8),
});
const objectMeta = schema('ObjectMeta', {
  name: str(1),
  generateName: str(2),
  namespace: str(3),
  selfLink: str(4),
  uid: str(5),
  resourceVersion: str(6),
  generation: int64(7),
  creationTimestamp: time(8),
  deletionTimestamp: ptr(time(9)),
  deletionGracePeriodSeconds: ptr(int64(10)),
  labels: { no: 11, type: 'stringMap' },
  annotations: { no: 12, type: 'stringMap' },
  ownerReferences: list(13, ownerReference),
  finalizers: list(14, 'string'),
  managedFields: list(17, managedFieldsEntry),
});
const listMeta = schema('ListMeta', {
  selfLink: str(1),
  resourceVersion: str(2),
  continue: str(3),
  remainingItemCount: ptr(int64(4)),
});
const statusCause = schema('StatusCause', { reason: str(1), message: str(2), field: str(3) });
const statusDetails = schema('StatusDetails', {
  name: str(1),
  group: str(2),
  kind: str(3),
  causes: list(4, statusCause),
  retryAfterSeconds: int32(5),
  uid: str(6),
});
const status = schema('Status', {
  metadata: msg(1, listMeta),
  status: str(2),
  message: str(3),
  reason: str(4),
  details: { no: 5, type: statusDetails, pointer: true },
  code: int32(6),
});

// core/v1
const emptyDir = schema('EmptyDirVolumeSource', {
  medium: str(1),
  sizeLimit: { no: 2, type: 'quantity', pointer: true },
});
const hostPath = schema('HostPathVolumeSource', { path: str(1), type: ptr(str(2)) });
const volumeSource = schema('VolumeSource', {
  hostPath: { no: 1, type: hostPath, pointer: true },
  emptyDir: { no: 2, type: emptyDir, pointer: true },
});
const volume = schema('Volume', {
  name: str(1),
  volumeSource: { no: 2, type: volumeSource, inline: true },
});
const containerPort = schema('ContainerPort', {
  name: str(1),
  hostPort: int32(2),
  containerPort: int32(3),
  protocol: str(4),
  hostIP: str(5),
});
const envVar = schema('EnvVar', { name: str(1), value: str(2) });
const resourceRequirements = schema('ResourceRequirements', {
  limits: { no: 1, type: 'quantityMap' },
  requests: { no: 2, type: 'quantityMap' },
});
const volumeMount = schema('VolumeMount', { name: str(1), readOnly: bool(2), mountPath: str(3) });
const container = schema('Container', {
  name: str(1),
  image: str(2),
  command: list(3, 'string'),
  args: list(4, 'string'),
  workingDir: str(5),
  ports: list(6, containerPort),
  env: list(7, envVar),
  resources: msg(8, resourceRequirements),
  volumeMounts: list(9, volumeMount),
  terminationMessagePath: str(13),
  imagePullPolicy: str(14),
  terminationMessagePolicy: str(20),
});
const toleration = schema('Toleration', {
  key: str(1),
  operator: str(2),
  value: str(3),
  effect: str(4),
  tolerationSeconds: ptr(int64(5)),
});
const schedulingGate = schema('PodSchedulingGate', { name: str(1) });
const readinessGate = schema('PodReadinessGate', { conditionType: str(1) });
const podSpec = schema('PodSpec', {
  volumes: list(1, volume),
  containers: list(2, container),
  restartPolicy: str(3),
  terminationGracePeriodSeconds: ptr(int64(4)),
  dnsPolicy: str(6),
  nodeSelector: { no: 7, type: 'stringMap' },
  serviceAccountName: str(8),
  serviceAccount: str(9),
  nodeName: str(10),
  hostNetwork: bool(11),
  hostname: str(16),
  subdomain: str(17),
  schedulerName: str(19),
  tolerations: list(22, toleration),
  priority: ptr(int32(25)),
  readinessGates: list(28, readinessGate),
  enableServiceLinks: ptr(bool(30)),
  schedulingGates: list(38, schedulingGate),
});
const podCondition = schema('PodCondition', {
  type: str(1),
  status: str(2),
  lastProbeTime: time(3),
  lastTransitionTime: time(4),
  reason: str(5),
  message: str(6),
  observedGeneration: int64(7),
});
const stateWaiting = schema('ContainerStateWaiting', { reason: str(1), message: str(2) });
const stateRunning = schema('ContainerStateRunning', { startedAt: time(1) });
const stateTerminated = schema('ContainerStateTerminated', {
  exitCode: int32(1),
  signal: int32(2),
  reason: str(3),
  message: str(4),
  startedAt: time(5),
  finishedAt: time(6),
  containerID: str(7),
});
const containerState = schema('ContainerState', {
  waiting: { no: 1, type: stateWaiting, pointer: true },
  running: { no: 2, type: stateRunning, pointer: true },
  terminated: { no: 3, type: stateTerminated, pointer: true },
});
const containerStatus = schema('ContainerStatus', {
  name: str(1),
  state: msg(2, containerState),
  lastState: msg(3, containerState),
  ready: bool(4),
  restartCount: int32(5),
  image: str(6),
  imageID: str(7),
  containerID: str(8),
  started: ptr(bool(9)),
});
const ip = schema('PodIP', { ip: str(1) });
const podStatus = schema('PodStatus', {
  phase: str(1),
  conditions: list(2, podCondition),
  message: str(3),
  reason: str(4),
  hostIP: str(5),
  podIP: str(6),
  startTime: ptr(time(7)),
  containerStatuses: list(8, containerStatus),
  qosClass: str(9),
  initContainerStatuses: list(10, containerStatus),
  nominatedNodeName: str(11),
  podIPs: list(12, ip),
  hostIPs: list(16, ip),
  observedGeneration: int64(17),
});
const pod = schema('Pod', {
  metadata: msg(1, objectMeta),
  spec: msg(2, podSpec),
  status: msg(3, podStatus),
});
const podList = schema('PodList', { metadata: msg(1, listMeta), items: list(2, pod) });

// ---------------------------------------------------------------------------------------------
// Encoding a JSON-shaped object by schema.

export interface EncodeOptions {
  /**
   * `gogo` (default): every non-pointer field written, zero values included, as the API server
   * does. `sparse`: only the fields the JSON object has, with a non-null value.
   */
  style?: 'gogo' | 'sparse';
  /** Field order within every message; repeated fields keep their own order either way. */
  order?: 'ascending' | 'descending';
  /** Fields no schema has, of every wire type, first and last in every message (not in Times). */
  unknownFields?: boolean;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `YYYY-MM-DDTHH:MM:SSZ` (whole seconds only: JSON never carries more) as Unix seconds. */
function timeSeconds(value: string): number {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(value)) {
    throw new Error(`not an RFC 3339 time to the second: ${value}`);
  }
  return Date.parse(value) / 1000;
}

function knownKeys(spec: Schema): Set<string> {
  const keys = new Set<string>();
  for (const [key, field] of Object.entries(spec.fields)) {
    if (field.inline && typeof field.type === 'object') {
      for (const inner of knownKeys(field.type)) keys.add(inner);
    } else keys.add(key);
  }
  return keys;
}

function encodeObject(spec: Schema, value: JsonObject, options: EncodeOptions): Uint8Array {
  const known = knownKeys(spec);
  for (const key of Object.keys(value)) {
    if (!known.has(key)) throw new Error(`the test writer's ${spec.name} has no field "${key}"`);
  }
  const writer = new ProtoWriter();
  if (options.unknownFields) writeUnknownFields(writer);
  const fields = Object.entries(spec.fields).sort(([, a], [, b]) =>
    options.order === 'descending' ? b.no - a.no : a.no - b.no,
  );
  for (const [key, field] of fields) {
    if (field.inline && typeof field.type === 'object') {
      const inner = knownKeys(field.type);
      const own = Object.fromEntries(Object.entries(value).filter(([k]) => inner.has(k)));
      writer.bytes(field.no, encodeObject(field.type, own, options));
    } else {
      writeField(writer, key, field, value[key], options);
    }
  }
  if (options.unknownFields) writeUnknownFields(writer);
  return writer.finish();
}

function writeField(
  writer: ProtoWriter,
  key: string,
  field: FieldSpec,
  value: unknown,
  options: EncodeOptions,
): void {
  const absent = value === undefined || value === null;
  if (field.repeated) {
    if (absent) return;
    if (!Array.isArray(value)) throw new Error(`${key} is not a list`);
    for (const item of value) writeOne(writer, key, field, item, options);
    return;
  }
  if (field.type === 'stringMap' || field.type === 'quantityMap') {
    if (absent) return;
    if (!isObject(value)) throw new Error(`${key} is not a map`);
    // gogo-protobuf writes map entries sorted by key.
    for (const mapKey of Object.keys(value).sort()) {
      const entry = new ProtoWriter().string(1, mapKey);
      const mapValue = value[mapKey];
      if (typeof mapValue !== 'string') throw new Error(`${key}.${mapKey} is not a string`);
      if (field.type === 'stringMap') entry.string(2, mapValue);
      else entry.message(2, (quantity) => quantity.string(1, mapValue));
      writer.message(field.no, entry);
    }
    return;
  }
  if (absent && (field.pointer || options.style === 'sparse')) return;
  writeOne(writer, key, field, value, options);
}

function writeOne(
  writer: ProtoWriter,
  key: string,
  field: FieldSpec,
  value: unknown,
  options: EncodeOptions,
): void {
  const absent = value === undefined || value === null;
  const type = field.type;
  if (typeof type === 'object') {
    if (!absent && !isObject(value)) throw new Error(`${key} is not an object`);
    writer.bytes(field.no, encodeObject(type, absent ? {} : (value as JsonObject), options));
    return;
  }
  switch (type) {
    case 'string':
      if (!absent && typeof value !== 'string') throw new Error(`${key} is not a string`);
      writer.string(field.no, absent ? '' : (value as string));
      return;
    case 'int32':
    case 'int64':
      if (!absent && !Number.isInteger(value)) throw new Error(`${key} is not an integer`);
      writer.varint(field.no, absent ? 0 : (value as number));
      return;
    case 'bool':
      if (!absent && typeof value !== 'boolean') throw new Error(`${key} is not a boolean`);
      writer.varint(field.no, absent ? false : (value as boolean));
      return;
    case 'time':
      // A zero metav1.Time marshals to no bytes at all; any other as {1: seconds, 2: nanos = 0}.
      if (absent) writer.bytes(field.no, []);
      else if (typeof value !== 'string') throw new Error(`${key} is not a time`);
      else writer.message(field.no, (t) => t.varint(1, timeSeconds(value)).varint(2, 0));
      return;
    case 'quantity':
      if (typeof value !== 'string') throw new Error(`${key} is not a quantity`);
      writer.message(field.no, (quantity) => quantity.string(1, value));
      return;
    case 'fieldsV1':
      writer.message(field.no, (fields) => fields.string(1, JSON.stringify(value ?? {})));
      return;
    default:
      throw new Error(`${key} has a type this writer cannot write here: ${type}`);
  }
}

function typeMetaOf(
  value: JsonObject,
  kind: string,
): { typeMeta: { apiVersion: string; kind: string }; rest: JsonObject } {
  const { kind: ownKind, apiVersion, ...rest } = value;
  return {
    typeMeta: {
      apiVersion: typeof apiVersion === 'string' ? apiVersion : 'v1',
      kind: typeof ownKind === 'string' ? ownKind : kind,
    },
    rest,
  };
}

export type BuildOptions = EncodeOptions & { envelope?: EnvelopeOptions };

/** A Pod message (no envelope), from the pod's JSON; `kind`/`apiVersion` belong to an envelope. */
export function encodePodMessage(json: JsonObject, options: EncodeOptions = {}): Uint8Array {
  return encodeObject(pod, typeMetaOf(json, 'Pod').rest, options);
}

/** A Pod as the API server sends one: "k8s\0" + `runtime.Unknown` around the Pod message. */
export function encodePod(json: JsonObject, options: BuildOptions = {}): Uint8Array {
  const { typeMeta, rest } = typeMetaOf(json, 'Pod');
  return k8sEnvelope(typeMeta, encodeObject(pod, rest, options), envelopeOptions(options));
}

/** A PodList page, enveloped: `{metadata: {resourceVersion, continue, ...}, items: [...]}`. */
export function encodePodList(json: JsonObject, options: BuildOptions = {}): Uint8Array {
  const { typeMeta, rest } = typeMetaOf(json, 'PodList');
  const items = Array.isArray(rest.items)
    ? rest.items.map((item) => (isObject(item) ? typeMetaOf(item, 'Pod').rest : item))
    : rest.items;
  return k8sEnvelope(
    typeMeta,
    encodeObject(podList, { ...rest, items }, options),
    envelopeOptions(options),
  );
}

/** A meta/v1 Status, enveloped (kind "Status", apiVersion "v1"). */
export function encodeStatus(json: JsonObject, options: BuildOptions = {}): Uint8Array {
  const { typeMeta, rest } = typeMetaOf(json, 'Status');
  return k8sEnvelope(typeMeta, encodeObject(status, rest, options), envelopeOptions(options));
}

/**
 * An enveloped object of any kind: Pod and Status by their schemas, any other kind (a Node, say)
 * with an empty body.
 */
export function encodeObjectOfKind(json: JsonObject, options: BuildOptions = {}): Uint8Array {
  const kind = json.kind;
  if (kind === 'Status') return encodeStatus(json, options);
  if (kind === undefined || kind === 'Pod') return encodePod(json, options);
  const { typeMeta } = typeMetaOf(json, String(kind));
  return k8sEnvelope(typeMeta, new Uint8Array(), envelopeOptions(options));
}

/**
 * One watch event as the API server frames it in a protobuf watch: a meta/v1 WatchEvent with no
 * envelope, `{1: type, 2: RawExtension {1: raw}}`, whose raw is the enveloped object. Not
 * length-prefixed: see `encodeWatchFrame`.
 */
export function encodeWatchEvent(
  event: { type: string; object: JsonObject },
  options: BuildOptions = {},
): Uint8Array {
  const raw = encodeObjectOfKind(event.object, options);
  const typeField = (w: ProtoWriter) => w.string(1, event.type);
  const objectField = (w: ProtoWriter) =>
    w.message(2, (extension) => {
      if (options.unknownFields) writeUnknownFields(extension);
      extension.bytes(1, raw);
    });
  const ordered = new ProtoWriter();
  if (options.unknownFields) writeUnknownFields(ordered);
  if (options.order === 'descending') {
    objectField(ordered);
    typeField(ordered);
  } else {
    typeField(ordered);
    objectField(ordered);
  }
  if (options.unknownFields) writeUnknownFields(ordered);
  return ordered.finish();
}

/** A watch event framed for the stream: length prefix + WatchEvent. */
export function encodeWatchFrame(
  event: { type: string; object: JsonObject },
  options: BuildOptions = {},
): Uint8Array {
  return lengthPrefixed(encodeWatchEvent(event, options));
}

function envelopeOptions(options: BuildOptions): EnvelopeOptions {
  return { unknownFields: options.unknownFields, ...options.envelope };
}
