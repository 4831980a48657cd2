/**
 * `EncodedPod`: a pod as the reflector's worker thread holds it — its key and version as strings,
 * everything else as the JSON bytes the main thread parses into the model's `Pod` — and
 * `POD_JSON`, the form (./pod-form.ts) that reads LIST pages and watch frames into it.
 *
 * Why: the worker never reads a pod, it only moves pods to the main thread. Building each pod's
 * objects and strings there, to walk them again for the hop's JSON, was most of a sync's cost in
 * that thread. From protobuf (the default against a real API server) a pod is transcoded straight
 * into its JSON (./protobuf-pod-json.ts); from JSON it is validated by the schema and written once.
 */
import { type Pod, parsePod, podKey } from '../../model/pod.js';
import type { PodForm } from './pod-form.js';
import { JsonBuffer, writePodJson } from './pod-json-writer.js';
import { transcodeProtobufPod } from './protobuf-pod-json.js';

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

/** Pods as `EncodedPod`s. */
export const POD_JSON: PodForm<EncodedPod> = {
  fromProtobuf(bytes, start, end) {
    const at = blocks.length;
    const read = transcodeProtobufPod(bytes, start, end, blocks);
    if (!read) return undefined;
    const { name, namespace, uid, resourceVersion } = read;
    // Protobuf cannot tell an absent version from an empty one; the decoder leaves both out.
    return new EncodedPod(identity(name, namespace, uid, resourceVersion || undefined), sealed(at));
  },
  fromValue: (value) => (value instanceof EncodedPod ? value : encodePod(parsePod(value))),
  key: (pod) => podKey(pod),
  version: (pod) => pod.metadata.resourceVersion,
};
