/**
 * `EncodedPod`: the one form the reflector and the pod API hold a pod in — its key and version as
 * strings, everything else as the JSON bytes the main thread parses into the model's `Pod` — and
 * the two ways bytes become one: a protobuf Pod message, or a JSON-shaped value.
 *
 * Why: the worker never reads a pod, it only moves pods to the main thread. Building each pod's
 * objects and strings there, to walk them again for the hop's JSON, was most of a sync's cost in
 * that thread. From protobuf (the default against a real API server) a pod is transcoded straight
 * into its JSON (./protobuf-pod-json.ts); from JSON it is validated by the schema and written once.
 */
import { conformsToPodWire, type Pod, parsePod } from '../../model/pod.js';
import type { SourceEvent } from '../../runtime/source-event.js';
import { JsonBuffer, writePodJson, writeWirePodJson } from './pod-json-writer.js';
import { type RefusedPodError, transcodeProtobufPod } from './protobuf-pod-json.js';

/** A pod in the worker thread: what the reflector reads of it, and its JSON for the hop. */
export class EncodedPod {
  constructor(
    /**
     * The identity the reflector reads: `podKey` for its store, `resourceVersion` (absent when the
     * pod has none) for its cursor, as a watch frame's object carries it.
     */
    readonly metadata: {
      readonly name: string;
      readonly namespace: string;
      readonly uid: string;
      readonly resourceVersion?: string;
    },
    /** The JSON of the model's `Pod` (what `writePodsJson` writes for it). Never changed. */
    readonly json: Uint8Array,
  ) {}
}

/**
 * Bytes of JSON per block: pods are written one after another into a block and keep a view of
 * their part, so a pod costs no buffer of its own. A block is never written again once full, so a
 * view stays valid; it is freed with the last pod that views it. Large enough for about a hundred
 * engine pods, small enough that a few long-lived pods pin little.
 */
const BLOCK_BYTES = 256 * 1024;

/**
 * A block this full takes no more pods: one more would likely outgrow it, and growing copies the
 * block (its earlier pods' views keep the old copy alive).
 */
const BLOCK_FULL_BYTES = BLOCK_BYTES - 32 * 1024;

/** Where encoded pods are written; a fresh block once the current one is full. */
const blocks = new JsonBuffer(BLOCK_BYTES);

/** The JSON written to `blocks` since `start`, as a view that later writes never touch. */
function sealed(start: number): Uint8Array {
  const json = blocks.bytes.subarray(start, blocks.length);
  // A block that is full is left to the pods that view it; the next pod starts a fresh one.
  if (blocks.length >= BLOCK_FULL_BYTES) blocks.detach();
  return json;
}

/**
 * An `EncodedPod`'s metadata, whichever reader built it: `resourceVersion` is present only when
 * the pod has one, as in the model's `Pod` (whose key and version checks read it).
 */
function identity(
  name: string,
  namespace: string,
  uid: string,
  resourceVersion: string | undefined,
): EncodedPod['metadata'] {
  return resourceVersion === undefined
    ? { name, namespace, uid }
    : { name, namespace, uid, resourceVersion };
}

/** A `Pod` (from JSON, validated by the schema) as an `EncodedPod`. */
export function encodePod(pod: Pod): EncodedPod {
  const start = blocks.length;
  writePodJson(blocks, pod);
  const { name, namespace, uid, resourceVersion } = pod.metadata;
  return new EncodedPod(identity(name, namespace, uid, resourceVersion), sealed(start));
}

/**
 * The pod in one protobuf Pod message's bytes (`[start, end)`, no envelope), validated as read.
 * Throws `RefusedPodError` (a `MalformedPodError` naming the field) for a pod the schema would
 * refuse, `ProtobufDecodeError` for bytes that are not protobuf.
 */
export function readProtobufPod(bytes: Uint8Array, start: number, end: number): EncodedPod {
  const at = blocks.length;
  const { name, namespace, uid, resourceVersion } = transcodeProtobufPod(bytes, start, end, blocks);
  // Protobuf cannot tell an absent version from an empty one; JSON leaves both out.
  return new EncodedPod(identity(name, namespace, uid, resourceVersion || undefined), sealed(at));
}

/**
 * A protobuf watch change whose pod the transcoder refused, in place of its object: its metadata
 * carries the version (so the reflector's cursor can step past it, as a JSON frame's does), and
 * reading it as a pod throws the refusal.
 */
export class RefusedPod {
  readonly metadata: { readonly resourceVersion?: string };
  constructor(readonly error: RefusedPodError) {
    const version = error.identity.resourceVersion;
    this.metadata = version === '' ? {} : { resourceVersion: version };
  }
}

/**
 * The pod in a JSON-shaped value (a JSON body's item, a watch frame's object) validated by the
 * schema, or a pod the protobuf reader already read, as it is. Throws `MalformedPodError` for a
 * value that is not a pod.
 */
export function readPodValue(value: unknown): EncodedPod {
  if (value instanceof EncodedPod) return value;
  if (value instanceof RefusedPod) throw value.error;
  if (conformsToPodWire(value)) {
    // Nearly every pod: its JSON written straight from the value, no `Pod` built in between.
    const start = blocks.length;
    writeWirePodJson(blocks, value);
    const { name, namespace, uid, resourceVersion } = value.metadata;
    return new EncodedPod(
      identity(name, namespace ?? '', uid, resourceVersion ?? undefined),
      sealed(start),
    );
  }
  return encodePod(parsePod(value));
}

/** A watch change of an `EncodedPod`: what the worker posts to the main thread. */
export type EncodedChange = Exclude<SourceEvent<EncodedPod>, { type: 'replace' }>;
