/**
 * Protobuf pods decoded straight into the model's `Pod`, validated as they are read: one pass over
 * the bytes, with no intermediate JSON-shaped object, no zod schema and no trimming pass after it.
 *
 * Why: on the service's default path (protobuf, watch-list) the worker thread is the bottleneck of
 * a sync, and it used to build each pod three times — the JSON-shaped value ./pod-protobuf.ts
 * decodes, zod's validated copy of it, and `shape()`'s trimmed `Pod` — for a schema the protobuf
 * reader already enforces: every field it keeps has its wire type checked (a string is a string, a
 * varint a number), so the only rules left to check are the ones the JSON schema adds (a name and a
 * uid, which protobuf cannot require).
 *
 * What it must equal: `parsePod(decodeProtobufPodList(…).items[i])`, key order included (the same
 * hidden classes as every other `Pod`), and the same error for a pod that is not readable. It does
 * not produce errors itself: for anything `parsePod` would reject it answers `undefined`, and the
 * caller decodes the same bytes the old way, so the error text is the schema's, unchanged.
 *
 * Size: one decoder for the Pod message and the nested messages it keeps, validating as it reads;
 * split, each nested reader would need the shared string table and field checks.
 */
import {
  boundAnnotations,
  type Container,
  type ContainerPort,
  type ContainerState,
  type ContainerStatus,
  type OwnerReference,
  type Pod,
  type PodCondition,
  parsePod,
  podKey,
} from '../../model/pod.js';
import type { PodForm } from './pod-form.js';
import {
  decodeProtobufWatchEvent,
  openEnvelope,
  readListMeta,
  readMapEntry,
  readTime,
} from './pod-protobuf.js';
import {
  ProtobufDecodeError,
  ProtobufReader,
  WIRE_LENGTH_DELIMITED,
  WIRE_VARINT,
} from './protobuf-reader.js';

/**
 * Pods this module decoded (and so validated): ./watch-frame-parser.ts takes them as they are
 * instead of running the schema again. A `WeakSet`, so it holds nothing alive.
 */
const decoded = new WeakSet<object>();

/** Whether `value` is a `Pod` this decoder built (validated where its bytes were read). */
export function isDecodedPod(value: unknown): value is Pod {
  return typeof value === 'object' && value !== null && decoded.has(value);
}

/** Thrown inside the walk when a pod breaks a rule `parsePod` has and protobuf does not. */
class UnreadablePod extends Error {}

function readStringField(reader: ProtobufReader, field: number): string {
  const message = reader.message();
  let value = '';
  while (message.more()) {
    const [number, wire] = message.tag();
    if (number === field && wire === WIRE_LENGTH_DELIMITED) value = message.string();
    else message.skip(wire);
  }
  return value;
}

function readPort(reader: ProtobufReader): ContainerPort {
  const port = reader.message();
  let name = '';
  let containerPort = 0;
  let protocol = '';
  while (port.more()) {
    const [field, wire] = port.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) name = port.string();
    else if (field === 3 && wire === WIRE_VARINT) containerPort = port.int32();
    else if (field === 4 && wire === WIRE_LENGTH_DELIMITED) protocol = port.string();
    else port.skip(wire);
  }
  if (name !== '') {
    return protocol !== '' ? { name, containerPort, protocol } : { name, containerPort };
  }
  return protocol !== '' ? { containerPort, protocol } : { containerPort };
}

function readContainer(reader: ProtobufReader): Container {
  const container = reader.message();
  let name = '';
  const ports: ContainerPort[] = [];
  while (container.more()) {
    const [field, wire] = container.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) name = container.string();
    else if (field === 6 && wire === WIRE_LENGTH_DELIMITED) ports.push(readPort(container));
    else container.skip(wire);
  }
  return { name, ports };
}

function readCondition(reader: ProtobufReader): PodCondition {
  const condition = reader.message();
  let type = '';
  let status = '';
  let reason = '';
  let message = '';
  let lastTransitionTime: string | undefined;
  while (condition.more()) {
    const [field, wire] = condition.tag();
    if (wire === WIRE_LENGTH_DELIMITED) {
      switch (field) {
        case 1:
          type = condition.string();
          continue;
        case 2:
          status = condition.string();
          continue;
        case 4:
          lastTransitionTime = readTime(condition);
          continue;
        case 5:
          reason = condition.string();
          continue;
        case 6:
          message = condition.string();
          continue;
      }
    }
    condition.skip(wire);
  }
  const out: PodCondition = { type, status };
  if (reason !== '') out.reason = reason;
  if (message !== '') out.message = message;
  if (lastTransitionTime !== undefined) out.lastTransitionTime = lastTransitionTime;
  return out;
}

function readWaiting(reader: ProtobufReader): { reason?: string; message?: string } {
  const waiting = reader.message();
  let reason = '';
  let message = '';
  while (waiting.more()) {
    const [field, wire] = waiting.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) reason = waiting.string();
    else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) message = waiting.string();
    else waiting.skip(wire);
  }
  const out: { reason?: string; message?: string } = {};
  if (reason !== '') out.reason = reason;
  if (message !== '') out.message = message;
  return out;
}

function readRunning(reader: ProtobufReader): { startedAt?: string } {
  const running = reader.message();
  let startedAt: string | undefined;
  while (running.more()) {
    const [field, wire] = running.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) startedAt = readTime(running);
    else running.skip(wire);
  }
  return startedAt !== undefined ? { startedAt } : {};
}

type Terminated = NonNullable<ContainerState['terminated']>;

function readTerminated(reader: ProtobufReader): Terminated {
  const terminated = reader.message();
  let exitCode = 0;
  let reason = '';
  let message = '';
  let startedAt: string | undefined;
  let finishedAt: string | undefined;
  while (terminated.more()) {
    const [field, wire] = terminated.tag();
    if (field === 1 && wire === WIRE_VARINT) exitCode = terminated.int32();
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) reason = terminated.string();
    else if (field === 4 && wire === WIRE_LENGTH_DELIMITED) message = terminated.string();
    else if (field === 5 && wire === WIRE_LENGTH_DELIMITED) startedAt = readTime(terminated);
    else if (field === 6 && wire === WIRE_LENGTH_DELIMITED) finishedAt = readTime(terminated);
    else terminated.skip(wire);
  }
  const out: Terminated = { exitCode };
  if (reason !== '') out.reason = reason;
  if (message !== '') out.message = message;
  if (startedAt !== undefined) out.startedAt = startedAt;
  if (finishedAt !== undefined) out.finishedAt = finishedAt;
  return out;
}

function readState(reader: ProtobufReader): ContainerState {
  const state = reader.message();
  let waiting: ContainerState['waiting'];
  let running: ContainerState['running'];
  let terminated: ContainerState['terminated'];
  while (state.more()) {
    const [field, wire] = state.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) waiting = readWaiting(state);
    else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) running = readRunning(state);
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) terminated = readTerminated(state);
    else state.skip(wire);
  }
  const out: ContainerState = {};
  if (waiting) out.waiting = waiting;
  if (running) out.running = running;
  if (terminated) out.terminated = terminated;
  return out;
}

/** `OwnerReference`: kind 1, name 3, uid 4; controller 6 kept only when `true`. */
function readOwnerReference(reader: ProtobufReader): OwnerReference {
  const reference = reader.message();
  let kind = '';
  let name = '';
  let uid = '';
  let controller = false;
  while (reference.more()) {
    const [field, wire] = reference.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) kind = reference.string();
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) name = reference.string();
    else if (field === 4 && wire === WIRE_LENGTH_DELIMITED) uid = reference.string();
    else if (field === 6 && wire === WIRE_VARINT) controller = reference.bool();
    else reference.skip(wire);
  }
  const out: OwnerReference = { kind, name, uid };
  if (controller) out.controller = true;
  return out;
}

function readContainerStatus(reader: ProtobufReader): ContainerStatus {
  const status = reader.message();
  let name = '';
  let ready = false;
  let restartCount = 0;
  let state: ContainerState | undefined;
  let lastState: ContainerState | undefined;
  while (status.more()) {
    const [field, wire] = status.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) name = status.string();
    else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) state = readState(status);
    else if (field === 3 && wire === WIRE_LENGTH_DELIMITED) lastState = readState(status);
    else if (field === 4 && wire === WIRE_VARINT) ready = status.bool();
    else if (field === 5 && wire === WIRE_VARINT) restartCount = status.int32();
    else status.skip(wire);
  }
  const out: ContainerStatus = { name, ready, restartCount };
  if (state) out.state = state;
  if (lastState) out.lastState = lastState;
  return out;
}

/** A core/v1 `Pod` message (no envelope), read into a `Pod`; throws `UnreadablePod`. */
function readPod(reader: ProtobufReader): Pod {
  let name = '';
  let namespace = '';
  let uid = '';
  let resourceVersion = '';
  let creationTimestamp: string | undefined;
  let deletionTimestamp: string | undefined;
  let labels: Record<string, string> = {};
  const ownerReferences: OwnerReference[] = [];
  let annotations: Record<string, string> = {};
  let nodeName = '';
  let subdomain = '';
  let nodeSelector: Record<string, string> = {};
  const schedulingGates: Array<{ name: string }> = [];
  const readinessGates: Array<{ conditionType: string }> = [];
  const containers: Container[] = [];
  let phase = '';
  let podIP = '';
  const conditions: PodCondition[] = [];
  const containerStatuses: ContainerStatus[] = [];
  let sawLabels = false;
  let sawAnnotations = false;
  let sawNodeSelector = false;
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (wire !== WIRE_LENGTH_DELIMITED) {
      reader.skip(wire);
      continue;
    }
    if (field === 1) {
      const meta = reader.message();
      while (meta.more()) {
        const [metaField, metaWire] = meta.tag();
        if (metaWire === WIRE_LENGTH_DELIMITED) {
          switch (metaField) {
            case 1:
              name = meta.string();
              continue;
            case 3:
              namespace = meta.string();
              continue;
            case 5:
              uid = meta.string();
              continue;
            case 6:
              resourceVersion = meta.string();
              continue;
            case 8:
              creationTimestamp = readTime(meta);
              continue;
            case 9:
              deletionTimestamp = readTime(meta);
              continue;
            case 13:
              ownerReferences.push(readOwnerReference(meta));
              continue;
            case 11:
              if (!sawLabels) labels = {};
              sawLabels = true;
              readMapEntry(meta, labels);
              continue;
            case 12:
              if (!sawAnnotations) annotations = {};
              sawAnnotations = true;
              readMapEntry(meta, annotations);
              continue;
          }
        }
        meta.skip(metaWire);
      }
    } else if (field === 2) {
      const spec = reader.message();
      while (spec.more()) {
        const [specField, specWire] = spec.tag();
        if (specWire === WIRE_LENGTH_DELIMITED) {
          switch (specField) {
            case 2:
              containers.push(readContainer(spec));
              continue;
            case 7:
              if (!sawNodeSelector) nodeSelector = {};
              sawNodeSelector = true;
              readMapEntry(spec, nodeSelector);
              continue;
            case 10:
              nodeName = spec.string();
              continue;
            case 17:
              subdomain = spec.string();
              continue;
            case 28:
              readinessGates.push({ conditionType: readStringField(spec, 1) });
              continue;
            case 38:
              schedulingGates.push({ name: readStringField(spec, 1) });
              continue;
          }
        }
        spec.skip(specWire);
      }
    } else if (field === 3) {
      const status = reader.message();
      while (status.more()) {
        const [statusField, statusWire] = status.tag();
        if (statusWire === WIRE_LENGTH_DELIMITED) {
          switch (statusField) {
            case 1:
              phase = status.string();
              continue;
            case 2:
              conditions.push(readCondition(status));
              continue;
            case 6:
              podIP = status.string();
              continue;
            case 8:
              containerStatuses.push(readContainerStatus(status));
              continue;
          }
        }
        status.skip(statusWire);
      }
    } else {
      reader.skip(wire);
    }
  }
  // The JSON schema's rules that protobuf cannot state: an empty string is an absent field there.
  if (name === '' || uid === '') throw new UnreadablePod();
  // Filled field by field in `shape()`'s key order (the optional ones only when set).
  const metadata = { name, namespace, uid } as Pod['metadata'];
  if (resourceVersion !== '') metadata.resourceVersion = resourceVersion;
  if (creationTimestamp !== undefined) metadata.creationTimestamp = creationTimestamp;
  if (deletionTimestamp !== undefined) metadata.deletionTimestamp = deletionTimestamp;
  metadata.labels = labels;
  metadata.annotations = boundAnnotations(annotations);
  if (ownerReferences.length > 0) metadata.ownerReferences = ownerReferences;
  // Filled field by field in `shape()`'s key order (the optional ones only when set).
  const spec = {} as Pod['spec'];
  if (nodeName !== '') spec.nodeName = nodeName;
  if (subdomain !== '') spec.subdomain = subdomain;
  spec.nodeSelector = nodeSelector;
  spec.schedulingGates = schedulingGates;
  if (readinessGates.length > 0) spec.readinessGates = readinessGates;
  spec.containers = containers;
  const status = {} as Pod['status'];
  if (phase !== '') status.phase = phase;
  if (podIP !== '') status.podIP = podIP;
  status.conditions = conditions;
  status.containerStatuses = containerStatuses;
  const pod: Pod = { metadata, spec, status };
  decoded.add(pod);
  return pod;
}

/**
 * The `Pod` in one Pod message's bytes (`[start, end)`, no envelope), or `undefined` when
 * `parsePod` would reject it (the caller then decodes it the old way for the error). Throws
 * `ProtobufDecodeError` for bytes that are not protobuf, as ./pod-protobuf.ts does.
 */
export function decodeProtobufPod(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
): Pod | undefined {
  try {
    return readPod(new ProtobufReader(bytes, start, end));
  } catch (error) {
    if (error instanceof UnreadablePod) return undefined;
    throw error;
  }
}

/** Pods as the model's `Pod` objects, decoded by this module. */
export const POD_OBJECTS: PodForm<Pod> = {
  fromProtobuf(bytes, start, end) {
    try {
      return decodeProtobufPod(bytes, start, end);
    } catch (error) {
      // Bytes that are not protobuf: the JSON-shaped decoder says why.
      if (error instanceof ProtobufDecodeError) return undefined;
      throw error;
    }
  },
  fromValue: (value) => (isDecodedPod(value) ? value : parsePod(value)),
  key: podKey,
  version: (pod) => pod.metadata.resourceVersion,
};

/** A protobuf `PodList` page: its list metadata (JSON-shaped) and its items in a pod form. */
export interface DecodedPodPage<T = Pod> {
  metadata: Record<string, unknown>;
  pods: T[];
}

/**
 * A `PodList` page with every item read by `form.fromProtobuf` (default: into `Pod`s), or
 * `undefined` when an item is not readable: the caller then reads the page with
 * `decodeProtobufPodList` and the form's `fromValue`, which name the item and the field. Throws
 * `ProtobufDecodeError` when the page itself (its envelope, its list) is not protobuf.
 */
export function decodeProtobufPodPage(bytes: Uint8Array): DecodedPodPage<Pod> | undefined;
export function decodeProtobufPodPage<T>(
  bytes: Uint8Array,
  form: PodForm<T>,
): DecodedPodPage<T> | undefined;
export function decodeProtobufPodPage(
  bytes: Uint8Array,
  form: PodForm<unknown> = POD_OBJECTS,
): DecodedPodPage<unknown> | undefined {
  const envelope = openEnvelope(bytes);
  if (envelope.kind !== 'PodList') {
    throw new ProtobufDecodeError(
      `expected a PodList, got ${JSON.stringify(envelope.kind.slice(0, 60))}`,
    );
  }
  const reader = new ProtobufReader(bytes, envelope.raw[0], envelope.raw[1]);
  const metadata: Record<string, unknown> = {};
  const pods: unknown[] = [];
  let readable = true;
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      Object.assign(metadata, readListMeta(reader));
    } else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) {
      const [start, end] = reader.span();
      // Past an unreadable item, the rest is still walked: a page that is not protobuf must fail
      // as one, whatever item came first.
      const pod = readable ? form.fromProtobuf(bytes, start, end) : undefined;
      if (pod !== undefined) pods.push(pod);
      else readable = false;
    } else {
      reader.skip(wire);
    }
  }
  return readable ? { metadata, pods } : undefined;
}

/** The watch event types whose object is a pod to apply. */
const CHANGE_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED']);

/**
 * One protobuf watch frame as `{type, object}`, as `decodeProtobufWatchEvent` gives it, but with
 * the object of a change already read by `form.fromProtobuf` (default: a decoded `Pod`, see
 * `isDecodedPod`). Anything else — a bookmark, an ERROR's Status, an object of another kind, an
 * unreadable pod — is decoded by `decodeProtobufWatchEvent`, so its reading (and its error) is
 * exactly as before.
 */
export function decodeProtobufPodWatchEvent(
  bytes: Uint8Array,
  form: PodForm<unknown> = POD_OBJECTS,
): Record<string, unknown> {
  const reader = new ProtobufReader(bytes);
  let type: string | undefined;
  let object: [number, number] | undefined;
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      type = reader.string();
    } else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) {
      const extension = reader.message();
      while (extension.more()) {
        const [extensionField, extensionWire] = extension.tag();
        if (extensionField === 1 && extensionWire === WIRE_LENGTH_DELIMITED)
          object = extension.span();
        else extension.skip(extensionWire);
      }
    } else {
      reader.skip(wire);
    }
  }
  if (type !== undefined && object && CHANGE_TYPES.has(type)) {
    const envelope = openEnvelope(bytes, object[0], object[1]);
    if (envelope.kind === 'Pod') {
      const pod = form.fromProtobuf(bytes, envelope.raw[0], envelope.raw[1]);
      if (pod !== undefined) return { type, object: pod };
    }
  }
  return decodeProtobufWatchEvent(bytes);
}
