/**
 * Kubernetes' protobuf encoding of pods, lists of pods, watch events and `Status`, decoded into the
 * same plain values the JSON encoding gives (only the fields ../../model/pod.ts reads), so one
 * schema, `podWireSchema`, validates both: the encoding is a transport detail, never a second
 * source of truth about what a pod is.
 *
 * Why protobuf at all: it is what client-go's typed clients ask for, and on a real API server it
 * is several times cheaper to produce and to read than JSON (the server encodes 10,000 pods as JSON
 * far slower than as protobuf, and the reader skips `managedFields` and container specs by length
 * instead of parsing them).
 *
 * The JSON equivalence rules, from the Go types' JSON tags: a string field tagged `omitempty` that
 * arrives empty is absent (gogo-protobuf writes non-pointer strings even when empty); a field
 * without `omitempty` keeps its zero value (`restartCount`, `ready`, `exitCode`, condition
 * `type`/`status`); a `metav1.Time` is an RFC 3339 UTC string to the second, and a zero one
 * (an empty message) is absent, as JSON's `null`. Field numbers are those of k8s.io/api
 * core/v1 and k8s.io/apimachinery meta/v1 and runtime `generated.proto`.
 *
 * Size: one message family (Pod and the few nested messages it reads, PodList, WatchEvent, Status)
 * decoded by one reader; the wire reader itself is protobuf-reader.ts.
 */
import {
  ProtobufDecodeError,
  ProtobufReader,
  WIRE_LENGTH_DELIMITED,
  WIRE_VARINT,
} from './protobuf-reader.js';

/** The content type the API server answers protobuf with (client-go's `ContentTypeProtobuf`). */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** The four bytes ("k8s\0") every protobuf object from the API server begins with. */
const MAGIC = [0x6b, 0x38, 0x73, 0x00] as const;

type Json = Record<string, unknown>;

/** A `runtime.Unknown`: the envelope around every protobuf object. */
export interface Envelope {
  apiVersion: string;
  kind: string;
  /** The object's own bytes: `[start, end)` of the buffer. */
  raw: [number, number];
}

function hasMagic(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start < MAGIC.length) return false;
  for (let index = 0; index < MAGIC.length; index += 1) {
    if (bytes[start + index] !== MAGIC[index]) return false;
  }
  return true;
}

/**
 * Opens the "k8s\0" + `runtime.Unknown` envelope. `head`: `bytes` may be only the first bytes of
 * the object (a page still arriving), so `raw` is cut at their end and the walk stops there.
 */
export function openEnvelope(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
  head = false,
): Envelope {
  if (!hasMagic(bytes, start, end)) {
    throw new ProtobufDecodeError('not a Kubernetes protobuf object (no k8s magic prefix)');
  }
  const reader = new ProtobufReader(bytes, start + MAGIC.length, end);
  const envelope: Envelope = { apiVersion: '', kind: '', raw: [reader.end, reader.end] };
  let contentEncoding = '';
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1) {
      reader.expect(wire, WIRE_LENGTH_DELIMITED, 'typeMeta');
      const meta = reader.message();
      while (meta.more()) {
        const [metaField, metaWire] = meta.tag();
        if (metaField === 1 && metaWire === WIRE_LENGTH_DELIMITED)
          envelope.apiVersion = meta.string();
        else if (metaField === 2 && metaWire === WIRE_LENGTH_DELIMITED)
          envelope.kind = meta.string();
        else meta.skip(metaWire);
      }
    } else if (field === 2) {
      reader.expect(wire, WIRE_LENGTH_DELIMITED, 'raw');
      if (head) {
        const length = reader.uint();
        envelope.raw = [reader.position, Math.min(end, reader.position + length)];
        return envelope;
      }
      envelope.raw = reader.span();
    } else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) {
      contentEncoding = reader.string();
    } else {
      reader.skip(wire);
    }
  }
  if (contentEncoding !== '') {
    throw new ProtobufDecodeError(
      `unsupported content encoding ${JSON.stringify(contentEncoding.slice(0, 40))}`,
    );
  }
  return envelope;
}

/** A string field: absent when empty and `omitempty`, as JSON has it. */
function put(target: Json, key: string, value: string, keepEmpty = false): void {
  if (value !== '' || keepEmpty) target[key] = value;
}

/** A `map<string,string>` entry: `{1: key, 2: value}`. */
export function readMapEntry(reader: ProtobufReader, into: Record<string, string>): void {
  const entry = reader.message();
  let key = '';
  let value = '';
  while (entry.more()) {
    const [field, wire] = entry.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) key = entry.string();
    else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) value = entry.string();
    else entry.skip(wire);
  }
  into[key] = value;
}

/** A `metav1.Time` (`{1: seconds, 2: nanos}`, nanos ignored as the API server ignores them). */
export function readTime(reader: ProtobufReader): string | undefined {
  const time = reader.message();
  if (!time.more()) return undefined;
  let seconds = 0;
  while (time.more()) {
    const [field, wire] = time.tag();
    if (field === 1 && wire === WIRE_VARINT) seconds = time.int64();
    else time.skip(wire);
  }
  return rfc3339Seconds(seconds);
}

/** A `metav1.Time` field under `key`: absent when zero, as JSON's `null` is left out. */
function putTime(target: Json, key: string, reader: ProtobufReader): void {
  const at = readTime(reader);
  if (at !== undefined) target[key] = at;
}

const pad2 = (value: number): string => (value < 10 ? `0${value}` : String(value));

/** The last time formatted: pods written together share timestamps, and formatting is not free. */
let lastSeconds = Number.NaN;
let lastText = '';

/**
 * Unix seconds as Go's `time.RFC3339` in UTC ("2006-01-02T15:04:05Z"), as `metav1.Time` marshals
 * to JSON. Integer arithmetic (days to a civil date, H. Hinnant's algorithm) for the years
 * 0000–9999, which is what Go can marshal; `Date` outside them; a `ProtobufDecodeError` beyond
 * what a `Date` holds (±8.64e12 s).
 */
export function rfc3339Seconds(seconds: number): string {
  if (seconds === lastSeconds) return lastText;
  let text: string;
  const days = Math.floor(seconds / 86_400);
  const inDay = seconds - days * 86_400;
  const era = Math.floor((days + 719_468) / 146_097);
  const dayOfEra = days + 719_468 - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra -
      Math.floor(dayOfEra / 1_460) +
      Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) /
      365,
  );
  const dayOfYear =
    dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  if (year >= 0 && year <= 9_999) {
    const hours = Math.floor(inDay / 3_600);
    const minutes = Math.floor((inDay % 3_600) / 60);
    text = `${String(year).padStart(4, '0')}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(inDay % 60)}Z`;
  } else {
    const date = new Date(seconds * 1000);
    if (Number.isNaN(date.getTime())) throw new ProtobufDecodeError('time out of range');
    const iso = date.toISOString();
    text = iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
  }
  lastSeconds = seconds;
  lastText = text;
  return text;
}

/** Field number → `[JSON key, keep when empty]`, for messages of strings only. */
type StringFields = Readonly<Record<number, readonly [string, boolean]>>;
/** `PodSchedulingGate`: `name` has no `omitempty`. */
const GATE_FIELDS: StringFields = { 1: ['name', true] };
const READINESS_GATE_FIELDS: StringFields = { 1: ['conditionType', true] };
const WAITING_FIELDS: StringFields = { 1: ['reason', false], 2: ['message', false] };
const CAUSE_FIELDS: StringFields = {
  1: ['reason', false],
  2: ['message', false],
  3: ['field', false],
};

/** Decodes a message whose fields are all strings we keep or skip. */
function readStrings(reader: ProtobufReader, fields: StringFields): Json {
  const message = reader.message();
  const out: Json = {};
  while (message.more()) {
    const [field, wire] = message.tag();
    const spec = fields[field];
    if (spec && wire === WIRE_LENGTH_DELIMITED) put(out, spec[0], message.string(), spec[1]);
    else message.skip(wire);
  }
  return out;
}

function readObjectMeta(reader: ProtobufReader): Json {
  const meta = reader.message();
  const out: Json = {};
  let labels: Record<string, string> | undefined;
  let annotations: Record<string, string> | undefined;
  const ownerReferences: Json[] = [];
  while (meta.more()) {
    const [field, wire] = meta.tag();
    if (wire === WIRE_LENGTH_DELIMITED) {
      switch (field) {
        case 1:
          put(out, 'name', meta.string());
          continue;
        case 3:
          put(out, 'namespace', meta.string());
          continue;
        case 5:
          put(out, 'uid', meta.string());
          continue;
        case 6:
          put(out, 'resourceVersion', meta.string());
          continue;
        case 8:
          putTime(out, 'creationTimestamp', meta);
          continue;
        case 9:
          putTime(out, 'deletionTimestamp', meta);
          continue;
        case 13:
          ownerReferences.push(readOwnerReference(meta));
          continue;
        case 11:
          labels ??= {};
          readMapEntry(meta, labels);
          continue;
        case 12:
          annotations ??= {};
          readMapEntry(meta, annotations);
          continue;
      }
    }
    meta.skip(wire);
  }
  if (labels) out.labels = labels;
  if (annotations) out.annotations = annotations;
  if (ownerReferences.length > 0) out.ownerReferences = ownerReferences;
  return out;
}

/** `OwnerReference`: kind 1, name 3, uid 4 (strings), controller 6 (an optional bool). */
function readOwnerReference(reader: ProtobufReader): Json {
  const reference = reader.message();
  const out: Json = {};
  while (reference.more()) {
    const [field, wire] = reference.tag();
    if (wire === WIRE_LENGTH_DELIMITED && (field === 1 || field === 3 || field === 4)) {
      out[field === 1 ? 'kind' : field === 3 ? 'name' : 'uid'] = reference.string();
    } else if (field === 6 && wire === WIRE_VARINT) out.controller = reference.bool();
    else reference.skip(wire);
  }
  return out;
}

function readContainerPort(reader: ProtobufReader): Json {
  const port = reader.message();
  const out: Json = { containerPort: 0 };
  while (port.more()) {
    const [field, wire] = port.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) put(out, 'name', port.string());
    else if (field === 3 && wire === WIRE_VARINT) out.containerPort = port.int32();
    else if (field === 4 && wire === WIRE_LENGTH_DELIMITED) put(out, 'protocol', port.string());
    else port.skip(wire);
  }
  return out;
}

function readContainer(reader: ProtobufReader): Json {
  const container = reader.message();
  const out: Json = { name: '' };
  const ports: Json[] = [];
  while (container.more()) {
    const [field, wire] = container.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) out.name = container.string();
    else if (field === 6 && wire === WIRE_LENGTH_DELIMITED)
      ports.push(readContainerPort(container));
    else container.skip(wire);
  }
  if (ports.length > 0) out.ports = ports;
  return out;
}

function readPodSpec(reader: ProtobufReader): Json {
  const spec = reader.message();
  const out: Json = {};
  const containers: Json[] = [];
  const gates: Json[] = [];
  const readinessGates: Json[] = [];
  let nodeSelector: Record<string, string> | undefined;
  while (spec.more()) {
    const [field, wire] = spec.tag();
    if (wire === WIRE_LENGTH_DELIMITED) {
      switch (field) {
        case 2:
          containers.push(readContainer(spec));
          continue;
        case 7:
          nodeSelector ??= {};
          readMapEntry(spec, nodeSelector);
          continue;
        case 10:
          put(out, 'nodeName', spec.string());
          continue;
        case 17:
          put(out, 'subdomain', spec.string());
          continue;
        case 28:
          readinessGates.push(readStrings(spec, READINESS_GATE_FIELDS));
          continue;
        case 38:
          gates.push(readStrings(spec, GATE_FIELDS));
          continue;
      }
    }
    spec.skip(wire);
  }
  if (containers.length > 0) out.containers = containers;
  if (nodeSelector) out.nodeSelector = nodeSelector;
  if (gates.length > 0) out.schedulingGates = gates;
  if (readinessGates.length > 0) out.readinessGates = readinessGates;
  return out;
}

function readCondition(reader: ProtobufReader): Json {
  const condition = reader.message();
  const out: Json = { type: '', status: '' };
  while (condition.more()) {
    const [field, wire] = condition.tag();
    if (wire === WIRE_LENGTH_DELIMITED) {
      switch (field) {
        case 1:
          out.type = condition.string();
          continue;
        case 2:
          out.status = condition.string();
          continue;
        case 4:
          putTime(out, 'lastTransitionTime', condition);
          continue;
        case 5:
          put(out, 'reason', condition.string());
          continue;
        case 6:
          put(out, 'message', condition.string());
          continue;
      }
    }
    condition.skip(wire);
  }
  return out;
}

function readContainerState(reader: ProtobufReader): Json {
  const state = reader.message();
  const out: Json = {};
  while (state.more()) {
    const [field, wire] = state.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      out.waiting = readStrings(state, WAITING_FIELDS);
    } else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) {
      const running = state.message();
      const value: Json = {};
      while (running.more()) {
        const [runningField, runningWire] = running.tag();
        if (runningField === 1 && runningWire === WIRE_LENGTH_DELIMITED) {
          putTime(value, 'startedAt', running);
        } else running.skip(runningWire);
      }
      out.running = value;
    } else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) {
      out.terminated = readTerminated(state);
    } else {
      state.skip(wire);
    }
  }
  return out;
}

function readTerminated(reader: ProtobufReader): Json {
  const terminated = reader.message();
  const out: Json = { exitCode: 0 };
  while (terminated.more()) {
    const [field, wire] = terminated.tag();
    if (field === 1 && wire === WIRE_VARINT) {
      out.exitCode = terminated.int32();
      continue;
    }
    if (wire === WIRE_LENGTH_DELIMITED) {
      if (field === 3) {
        put(out, 'reason', terminated.string());
        continue;
      }
      if (field === 4) {
        put(out, 'message', terminated.string());
        continue;
      }
      if (field === 5 || field === 6) {
        putTime(out, field === 5 ? 'startedAt' : 'finishedAt', terminated);
        continue;
      }
    }
    terminated.skip(wire);
  }
  return out;
}

function readContainerStatus(reader: ProtobufReader): Json {
  const status = reader.message();
  const out: Json = { name: '', ready: false, restartCount: 0 };
  while (status.more()) {
    const [field, wire] = status.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) out.name = status.string();
    else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) out.state = readContainerState(status);
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED)
      out.lastState = readContainerState(status);
    else if (field === 4 && wire === WIRE_VARINT) out.ready = status.bool();
    else if (field === 5 && wire === WIRE_VARINT) out.restartCount = status.int32();
    else status.skip(wire);
  }
  return out;
}

function readPodStatus(reader: ProtobufReader): Json {
  const status = reader.message();
  const out: Json = {};
  const conditions: Json[] = [];
  const containerStatuses: Json[] = [];
  while (status.more()) {
    const [field, wire] = status.tag();
    if (wire === WIRE_LENGTH_DELIMITED) {
      switch (field) {
        case 1:
          put(out, 'phase', status.string());
          continue;
        case 2:
          conditions.push(readCondition(status));
          continue;
        case 6:
          put(out, 'podIP', status.string());
          continue;
        case 8:
          containerStatuses.push(readContainerStatus(status));
          continue;
      }
    }
    status.skip(wire);
  }
  if (conditions.length > 0) out.conditions = conditions;
  if (containerStatuses.length > 0) out.containerStatuses = containerStatuses;
  return out;
}

/** A core/v1 `Pod` message (no envelope) as its JSON fields that ../../model/pod.ts reads. */
function readPod(reader: ProtobufReader): Json {
  const out: Json = {};
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) out.metadata = readObjectMeta(reader);
    else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) out.spec = readPodSpec(reader);
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) out.status = readPodStatus(reader);
    else reader.skip(wire);
  }
  out.metadata ??= {};
  return out;
}

/**
 * A meta/v1 `Status` message (no envelope) as its JSON form, for ../client/api-errors.ts
 * `readStatus`.
 */
function readStatusMessage(reader: ProtobufReader): Json {
  const out: Json = { kind: 'Status', apiVersion: 'v1', metadata: {} };
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 6 && wire === WIRE_VARINT) {
      // `code` is omitempty: JSON has no code 0, which gogo-protobuf nevertheless writes.
      const code = reader.int32();
      if (code !== 0) out.code = code;
      continue;
    }
    if (wire === WIRE_LENGTH_DELIMITED) {
      if (field === 2) {
        put(out, 'status', reader.string());
        continue;
      }
      if (field === 3) {
        put(out, 'message', reader.string());
        continue;
      }
      if (field === 4) {
        put(out, 'reason', reader.string());
        continue;
      }
      if (field === 5) {
        out.details = readStatusDetails(reader);
        continue;
      }
    }
    reader.skip(wire);
  }
  return out;
}

function readStatusDetails(reader: ProtobufReader): Json {
  const details = reader.message();
  const out: Json = {};
  const causes: Json[] = [];
  while (details.more()) {
    const [field, wire] = details.tag();
    if (field === 4 && wire === WIRE_LENGTH_DELIMITED) {
      causes.push(readStrings(details, CAUSE_FIELDS));
    } else if (field === 5 && wire === WIRE_VARINT) {
      // omitempty, like `code`.
      const seconds = details.int32();
      if (seconds !== 0) out.retryAfterSeconds = seconds;
    } else {
      details.skip(wire);
    }
  }
  if (causes.length > 0) out.causes = causes;
  return out;
}

/**
 * One enveloped object as its JSON form: a Pod (fields ../../model/pod.ts reads) or a Status; any
 * other kind as just `{kind, apiVersion}`, which the pod schema then rejects by name.
 */
function readEnveloped(bytes: Uint8Array, start?: number, end?: number): Json {
  const envelope = openEnvelope(bytes, start, end);
  const reader = new ProtobufReader(bytes, envelope.raw[0], envelope.raw[1]);
  if (envelope.kind === 'Pod')
    return { kind: 'Pod', apiVersion: envelope.apiVersion, ...readPod(reader) };
  if (envelope.kind === 'Status') return readStatusMessage(reader);
  return { kind: envelope.kind, apiVersion: envelope.apiVersion };
}

/** A protobuf object (a Status, most often: an error body) as its JSON form. */
export function decodeProtobufObject(bytes: Uint8Array): Json {
  return readEnveloped(bytes);
}

/**
 * A `PodList` page as its JSON form: `{metadata: {resourceVersion, continue}, items}`, each item
 * the fields ../../model/pod.ts reads. A body of another kind is an error naming the kind.
 */
export function decodeProtobufPodList(bytes: Uint8Array): Json {
  const envelope = openEnvelope(bytes);
  if (envelope.kind !== 'PodList') {
    throw new ProtobufDecodeError(
      `expected a PodList, got ${JSON.stringify(envelope.kind.slice(0, 60))}`,
    );
  }
  const reader = new ProtobufReader(bytes, envelope.raw[0], envelope.raw[1]);
  const metadata: Json = {};
  const items: Json[] = [];
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      Object.assign(metadata, readListMeta(reader));
    } else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) {
      items.push(readPod(reader.message()));
    } else {
      reader.skip(wire);
    }
  }
  return { kind: 'PodList', apiVersion: envelope.apiVersion, metadata, items };
}

/** A `ListMeta` as its JSON fields: `resourceVersion`, `continue`, `remainingItemCount`. */
export function readListMeta(reader: ProtobufReader): Json {
  const meta = reader.message();
  const out: Json = {};
  while (meta.more()) {
    const [field, wire] = meta.tag();
    if (field === 2 && wire === WIRE_LENGTH_DELIMITED) put(out, 'resourceVersion', meta.string());
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) put(out, 'continue', meta.string());
    else if (field === 4 && wire === WIRE_VARINT) out.remainingItemCount = meta.int64();
    else meta.skip(wire);
  }
  return out;
}

/**
 * The continue token of a protobuf `PodList` page, read from its head only (the list's metadata
 * is its first field, written before any item; the head may be all that has arrived), or
 * undefined: the prefetch hint ../resources/http-pod-api.ts checks against the decoded page. Never
 * throws.
 */
export function peekProtobufContinueToken(bytes: Uint8Array): string | undefined {
  try {
    const { raw } = openEnvelope(bytes, 0, bytes.length, true);
    const reader = new ProtobufReader(bytes, raw[0], raw[1]);
    if (!reader.more()) return undefined;
    const [field, wire] = reader.tag();
    if (field !== 1 || wire !== WIRE_LENGTH_DELIMITED) return undefined;
    const token = readListMeta(reader).continue;
    return typeof token === 'string' ? token : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One frame of a protobuf watch stream: a meta/v1 `WatchEvent` with no envelope
 * (`{1: type, 2: {1: raw}}`), whose object is an enveloped Pod or Status. Its JSON form,
 * `{type, object}`, is what ./watch-frame-parser.ts reads.
 */
export function decodeProtobufWatchEvent(bytes: Uint8Array): Json {
  const reader = new ProtobufReader(bytes);
  const out: Json = {};
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      out.type = reader.string();
    } else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) {
      const extension = reader.message();
      while (extension.more()) {
        const [extensionField, extensionWire] = extension.tag();
        if (extensionField === 1 && extensionWire === WIRE_LENGTH_DELIMITED) {
          const [start, end] = extension.span();
          out.object = readEnveloped(bytes, start, end);
        } else extension.skip(extensionWire);
      }
    } else {
      reader.skip(wire);
    }
  }
  return out;
}

/** Whether a response's Content-Type is Kubernetes protobuf (parameters such as `stream=watch` aside). */
export function isProtobufContentType(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}
