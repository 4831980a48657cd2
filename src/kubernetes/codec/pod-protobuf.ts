/**
 * Kubernetes' protobuf encoding of lists of pods, watch events and `Status`: the envelopes around
 * the pods, opened here, with each Pod message read by the one pod reader (./encoded-pod.ts, over
 * ./protobuf-pod-json.ts) into the same `EncodedPod` the JSON encoding gives, and a `Status` or a
 * list's metadata decoded into the plain value its JSON would be, so ../client/api-errors.ts and
 * ../resources/http-pod-api.ts read both encodings alike: the encoding is a transport detail,
 * never a second source of truth about what a pod is.
 *
 * Why protobuf at all: it is what client-go's typed clients ask for, and on a real API server it
 * is several times cheaper to produce and to read than JSON (the server encodes 10,000 pods as JSON
 * far slower than as protobuf, and the reader skips `managedFields` and container specs by length
 * instead of parsing them).
 *
 * The JSON equivalence rules for the messages decoded here, from the Go types' JSON tags: a string
 * field tagged `omitempty` that arrives empty is absent; so is a zero `code` or
 * `retryAfterSeconds`. Field numbers are those of k8s.io/apimachinery meta/v1 and runtime
 * `generated.proto`.
 */
import { type EncodedPod, RefusedPod, readProtobufPod } from './encoded-pod.js';
import { protobufPodMetadata, RefusedPodError } from './protobuf-pod-json.js';
import {
  decodeUtf8,
  expectBounds,
  expectWireType,
  ProtobufDecodeError,
  ProtobufReader,
  WIRE_LENGTH_DELIMITED,
  WIRE_VARINT,
  WireCursor,
} from './protobuf-reader.js';

/** The content type the API server answers protobuf with (client-go's `ContentTypeProtobuf`). */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** The four bytes ("k8s\0") every protobuf object from the API server begins with. */
const MAGIC = [0x6b, 0x38, 0x73, 0x00] as const;

type Json = Record<string, unknown>;

/**
 * A `runtime.Unknown`: the envelope around every protobuf object. One object, filled again by each
 * `openEnvelope`: a watch opens one per event, and a fresh envelope, its readers and its span
 * tuples were a fifth of what the worker thread allocated over a watch-list's initial events. Read
 * it before the next envelope is opened.
 */
interface Envelope {
  apiVersion: string;
  kind: string;
  /** The object's own bytes: `[rawStart, rawEnd)` of the buffer. */
  rawStart: number;
  rawEnd: number;
}

const envelope: Envelope = { apiVersion: '', kind: '', rawStart: 0, rawEnd: 0 };

/**
 * The cursor of this module's per-frame walks (the watch event, its envelope): each walk is
 * synchronous and done before the next begins, and a pod is read by the transcoder's own cursor.
 */
const cursor = new WireCursor();

function hasMagic(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start < MAGIC.length) return false;
  for (let index = 0; index < MAGIC.length; index += 1) {
    if (bytes[start + index] !== MAGIC[index]) return false;
  }
  return true;
}

/**
 * Opens the "k8s\0" + `runtime.Unknown` envelope into `envelope`. `head`: `bytes` may be only the
 * first bytes of the object (a page still arriving), so the raw bytes are cut at their end and the
 * walk stops there.
 */
function openEnvelope(bytes: Uint8Array, start = 0, end = bytes.length, head = false): Envelope {
  expectBounds(bytes, start, end);
  if (!hasMagic(bytes, start, end)) {
    throw new ProtobufDecodeError('not a Kubernetes protobuf object (no k8s magic prefix)');
  }
  const c = cursor;
  c.bytes = bytes;
  c.at = start + MAGIC.length;
  envelope.apiVersion = '';
  envelope.kind = '';
  envelope.rawStart = end;
  envelope.rawEnd = end;
  let encodingStart = 0;
  let encodingEnd = 0;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === 1) {
      expectWireType(c.wire, WIRE_LENGTH_DELIMITED, 'typeMeta');
      const metaEnd = c.spanEnd(end);
      while (c.at < metaEnd) {
        const metaField = c.tag(metaEnd);
        if ((metaField === 1 || metaField === 2) && c.wire === WIRE_LENGTH_DELIMITED) {
          c.stepOver(metaEnd);
          const text = decodeUtf8(bytes, c.spanStart, c.at);
          if (metaField === 1) envelope.apiVersion = text;
          else envelope.kind = text;
        } else c.skip(metaEnd);
      }
    } else if (field === 2) {
      expectWireType(c.wire, WIRE_LENGTH_DELIMITED, 'raw');
      if (head) {
        const length = c.uint(end);
        envelope.rawStart = c.at;
        envelope.rawEnd = Math.min(end, c.at + length);
        return envelope;
      }
      c.stepOver(end);
      envelope.rawStart = c.spanStart;
      envelope.rawEnd = c.at;
    } else if (field === 3 && c.wire === WIRE_LENGTH_DELIMITED) {
      c.stepOver(end);
      encodingStart = c.spanStart;
      encodingEnd = c.at;
    } else {
      c.skip(end);
    }
  }
  if (encodingEnd > encodingStart) {
    const contentEncoding = decodeUtf8(bytes, encodingStart, encodingEnd);
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

/** Field number → `[JSON key, keep when empty]`, for messages of strings only. */
type StringFields = Readonly<Record<number, readonly [string, boolean]>>;
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

/** The watch event types whose object is a pod to apply. */
const CHANGE_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED']);

/**
 * One enveloped object as a watch frame's object: a changed Pod as an `EncodedPod` (or a
 * `RefusedPod`, whose reading names the field); any other Pod (a BOOKMARK's) as its metadata; a
 * Status as its JSON form; any other kind as just `{kind, apiVersion}`, which the pod schema then
 * rejects by name. `type`: the watch event's, undefined outside a watch.
 */
function readEnveloped(
  bytes: Uint8Array,
  start: number | undefined,
  end: number | undefined,
  type: string | undefined,
): unknown {
  const { kind, apiVersion, rawStart, rawEnd } = openEnvelope(bytes, start, end);
  if (kind === 'Pod') {
    if (type !== undefined && CHANGE_TYPES.has(type)) {
      try {
        return readProtobufPod(bytes, rawStart, rawEnd);
      } catch (error) {
        if (error instanceof RefusedPodError) return new RefusedPod(error);
        throw error;
      }
    }
    const metadata = protobufPodMetadata(bytes, rawStart, rawEnd);
    return { kind: 'Pod', apiVersion, metadata };
  }
  if (kind === 'Status') return readStatusMessage(new ProtobufReader(bytes, rawStart, rawEnd));
  return { kind, apiVersion };
}

/** A protobuf object (a Status, most often: an error body) as its JSON form. */
export function decodeProtobufObject(bytes: Uint8Array): unknown {
  return readEnveloped(bytes, undefined, undefined, undefined);
}

/** A `PodList` page: its list metadata (JSON-shaped) and its items read as pods. */
export type ProtobufPodPage = {
  metadata: Record<string, unknown>;
  pods: EncodedPod[];
  /** The first item the pod reader refused, with its place in the page; the page is then void. */
  refused?: { index: number; error: RefusedPodError };
};

/**
 * A `PodList` page, every item read by the pod reader. A refused item voids the page (`refused`
 * says which and why), but the rest is still read: a page that is not protobuf must fail as one,
 * whatever item came first. Throws `ProtobufDecodeError` when the page (its envelope, its list,
 * an item's bytes) is not protobuf, or is a body of another kind, naming it.
 */
export function decodeProtobufPodList(bytes: Uint8Array): ProtobufPodPage {
  const { kind, rawStart, rawEnd } = openEnvelope(bytes);
  if (kind !== 'PodList') {
    throw new ProtobufDecodeError(`expected a PodList, got ${JSON.stringify(kind.slice(0, 60))}`);
  }
  const reader = new ProtobufReader(bytes, rawStart, rawEnd);
  const page: ProtobufPodPage = { metadata: {}, pods: [] };
  let index = 0;
  while (reader.more()) {
    const [field, wire] = reader.tag();
    if (field === 1 && wire === WIRE_LENGTH_DELIMITED) {
      Object.assign(page.metadata, readListMeta(reader));
    } else if (field === 2 && wire === WIRE_LENGTH_DELIMITED) {
      const [start, end] = reader.span();
      try {
        const pod = readProtobufPod(bytes, start, end);
        if (!page.refused) page.pods.push(pod);
      } catch (error) {
        if (!(error instanceof RefusedPodError)) throw error;
        page.refused ??= { index, error };
      }
      index += 1;
    } else {
      reader.skip(wire);
    }
  }
  return page;
}

/** A `ListMeta` as its JSON fields: `resourceVersion`, `continue`, `remainingItemCount`. */
function readListMeta(reader: ProtobufReader): Json {
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
    const { rawStart, rawEnd } = openEnvelope(bytes, 0, bytes.length, true);
    const reader = new ProtobufReader(bytes, rawStart, rawEnd);
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
 * `{type, object}` (a change's pod read as `readEnveloped` says), is what ./watch-frame-parser.ts
 * reads.
 */
export function decodeProtobufWatchEvent(bytes: Uint8Array): Record<string, unknown> {
  // The walk keeps offsets only; the one string, the event's type, is interned by `decodeUtf8`.
  const c = cursor;
  c.bytes = bytes;
  c.at = 0;
  const end = bytes.length;
  let typeStart = -1;
  let typeEnd = -1;
  let objectStart = -1;
  let objectEnd = -1;
  while (c.at < end) {
    const field = c.tag(end);
    if (field === 1 && c.wire === WIRE_LENGTH_DELIMITED) {
      c.stepOver(end);
      typeStart = c.spanStart;
      typeEnd = c.at;
    } else if (field === 2 && c.wire === WIRE_LENGTH_DELIMITED) {
      const extensionEnd = c.spanEnd(end);
      while (c.at < extensionEnd) {
        if (c.tag(extensionEnd) === 1 && c.wire === WIRE_LENGTH_DELIMITED) {
          c.stepOver(extensionEnd);
          objectStart = c.spanStart;
          objectEnd = c.at;
        } else c.skip(extensionEnd);
      }
    } else {
      c.skip(end);
    }
  }
  const out: Record<string, unknown> = {};
  const type = typeStart < 0 ? undefined : decodeUtf8(bytes, typeStart, typeEnd);
  if (type !== undefined) out.type = type;
  if (objectStart >= 0) out.object = readEnveloped(bytes, objectStart, objectEnd, type);
  return out;
}

/** Whether a response's Content-Type is Kubernetes protobuf (parameters such as `stream=watch` aside). */
export function isProtobufContentType(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}
