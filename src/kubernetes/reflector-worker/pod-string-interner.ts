/**
 * One copy of the strings that neighbouring pods repeat, for the main thread's cache.
 *
 * The main thread's pods come from `JSON.parse` (./main-thread-stream.ts), and V8 gives a parsed
 * string value a copy of its own unless it is at most 10 characters long (shorter ones are
 * internalized). Many of a pod's longer strings are the same as the pod's before it: a LIST comes
 * sorted by name, so an LWS group's pods come together, with the same owner (kind and uid), the
 * same group labels (`controller-revision-hash`, `group-key`, the template hash), often the same
 * node and the same creation second, and every pod has the same condition types in the same
 * order. Measured over 10,000 LWS engine pods (bench:sync's), those copies were a sixth of the
 * cache's heap.
 *
 * Each field is compared with the same field of the previous pod and, when equal, pointed at that
 * pod's copy: no table, so nothing to bound and no hashing (a bounded table of every string seen
 * freed a little more but cost several times the main thread's CPU; this costs 0.2–0.4 µs a pod).
 * A label whose value is the pod's own name (StatefulSet's `pod-name`) takes the name's copy.
 */
import type { Pod } from '../../model/pod.js';

/** V8 internalizes `JSON.parse`'s string values up to this length itself; shorter are shared already. */
const V8_INTERNALIZED_VALUE_LENGTH = 10;

/**
 * Points a just-parsed pod's strings at the previous pod's equal ones. Only for pods nobody else
 * holds yet: it writes into the pod. The strings stay equal, so no reader can tell.
 */
export class PodStringInterner {
  #previous: Pod | undefined;

  /** Shares what this pod repeats of the pod before it, in place; returns the pod. */
  internPod(pod: Pod): Pod {
    const previous = this.#previous;
    this.#previous = pod;
    if (previous === undefined) return pod;
    const metadata = pod.metadata;
    const before = previous.metadata;
    if (metadata.namespace === before.namespace) metadata.namespace = before.namespace;
    if (metadata.creationTimestamp === before.creationTimestamp) {
      metadata.creationTimestamp = before.creationTimestamp;
    }
    shareValues(metadata.labels, before.labels, metadata.name);
    shareValues(metadata.annotations, before.annotations, metadata.name);
    const owners = metadata.ownerReferences;
    const ownersBefore = before.ownerReferences;
    if (owners !== undefined && ownersBefore !== undefined) {
      const count = Math.min(owners.length, ownersBefore.length);
      for (let index = 0; index < count; index += 1) {
        const owner = owners[index] as (typeof owners)[number];
        const other = ownersBefore[index] as (typeof owners)[number];
        if (owner.kind === other.kind) owner.kind = other.kind;
        if (owner.name === other.name) owner.name = other.name;
        if (owner.uid === other.uid) owner.uid = other.uid;
      }
    }
    if (pod.spec.nodeName === previous.spec.nodeName) pod.spec.nodeName = previous.spec.nodeName;
    if (pod.spec.subdomain === previous.spec.subdomain) {
      pod.spec.subdomain = previous.spec.subdomain;
    }
    const conditions = pod.status.conditions;
    const conditionsBefore = previous.status.conditions;
    const count = Math.min(conditions.length, conditionsBefore.length);
    for (let index = 0; index < count; index += 1) {
      const condition = conditions[index] as (typeof conditions)[number];
      const other = conditionsBefore[index] as (typeof conditions)[number];
      if (condition.type === other.type) condition.type = other.type;
      if (condition.lastTransitionTime === other.lastTransitionTime) {
        condition.lastTransitionTime = other.lastTransitionTime;
      }
    }
    return pod;
  }
}

/**
 * A string map's values that equal the previous pod's under the same key, or the pod's name.
 *
 * Over `Object.keys`, not `for…in`: a `for…in` over label and annotation maps in turn deoptimized
 * V8's optimized code for this function at every new key or map seen ("unexpected name in keyed
 * access", "wrong map"), 45 times in a 10,000-pod sync, each time compiled again on a helper
 * thread; this loop is never deoptimized and interns 10,000 cold pods in ~12 instead of ~17 ms.
 */
function shareValues(
  map: Record<string, string>,
  before: Record<string, string>,
  name: string,
): void {
  const keys = Object.keys(map);
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index] as string;
    const value = map[key] as string;
    if (value.length <= V8_INTERNALIZED_VALUE_LENGTH) continue;
    const other = before[key];
    if (value === other) map[key] = other;
    else if (value === name) map[key] = name;
  }
}
