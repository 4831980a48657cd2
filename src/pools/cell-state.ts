/**
 * A cell's state, derived only from its member pods as the store holds them: pure functions, so
 * every rule (alive, why not, generation, address) is tested without a loop, a clock or a cluster,
 * and a reconcile that runs twice on the same members publishes the same state (idempotence).
 *
 * Size: every rule that derives a cell's state from its pods (alive, why not, generation, address,
 * routable), pure and tested together.
 */
import { createHash } from 'node:crypto';
import type { Pod } from '../model/pod.js';
import type { ParentKey } from '../runtime/source-event.js';
import { DEFAULT_BOOTSTRAP_PORT_ANNOTATION, parseBootstrapPort } from './bootstrap-port.js';
import { parseIndex, splitParentKey } from './cell-key.js';
import { ipRefusal, parseIp } from './endpoint-address.js';
import { LWS_TEMPLATE_REVISION_LABEL, type PoolLabels } from './labels.js';
import { boundOptionalPodText, boundPodText } from './pod-text.js';

/** One pod of a cell, as the API shows it. `null` rather than absent, so every field is always there. */
export interface CellMember {
  name: string;
  uid: string;
  phase: string | null;
  /**
   * The pod counts as ready for its cell: its `Ready` condition is `True` (the kubelet's readiness
   * probe verdict), or, for a pod carrying the cell readiness gate, `Ready` short of that gate
   * (see `countsAsReady`).
   */
  ready: boolean;
  podIP: string | null;
  /** Sum of the containers' restart counts. */
  restarts: number;
  /** A deletion timestamp is set: the pod is terminating and must not take new work. */
  deleting: boolean;
  /** Position in the cell; `null` when the label is present but unreadable. */
  workerIndex: number | null;
  node: string | null;
  /**
   * The cell readiness gate on this pod (`--cell-readiness-gate`): `null` when the pod does not
   * name it in `spec.readinessGates` (or the gate is off); else the condition as the pod's status
   * holds it, `status` `null` before anyone wrote it.
   */
  readinessGate: MemberReadinessGate | null;
}

/** The cell readiness gate's condition on one member, as read from the pod's status. */
interface MemberReadinessGate {
  status: string | null;
  reason: string | null;
}

/** Machine-readable reason codes, one per rule that keeps a cell from being alive. */
type NotAliveReasonCode =
  | 'PodsNotReady'
  | 'PodsDeleting'
  | 'IndicesMissing'
  | 'IndicesUnexpected'
  | 'IndicesDuplicated'
  | 'WorkerIndexInvalid'
  | 'SizeInvalid'
  /** A placeholder: the workload asks for this cell and no pod of it exists (pool-capacity.ts). */
  | 'NoPods'
  | 'StaleMember';

/**
 * One reason a cell is not alive: a code for alerts, a sentence for people, and what it is about.
 * `pods` and `indices` list at most `MAX_LISTED_PER_REASON` entries (the first ones, in order);
 * `omitted` counts the rest, so a cell of thousands of pods, or a size annotation written to
 * hurt, costs every event, log line and response the same few hundred bytes.
 */
export interface NotAliveReason {
  reason: NotAliveReasonCode;
  message: string;
  pods?: string[] | undefined;
  indices?: number[] | undefined;
  /** How many pods or indices the rule concerns beyond those listed; absent when none. */
  omitted?: number | undefined;
}

/** Machine-readable reason codes, one per rule that keeps a cell out of every sink. */
type NotRoutableReasonCode =
  | 'NoServingPort'
  | 'AddressInvalid'
  | 'AddressConflict'
  | 'NoBootstrapPort';

/** One reason a cell is not routed to (alive or not): a code for alerts, a sentence for people. */
export interface NotRoutableReason {
  reason: NotRoutableReasonCode;
  message: string;
}

/**
 * Everything the service knows about one cell, derived from its members alone: what the registry
 * publishes (plus `lastTransitionTime`), what sinks route to, and what `/api/v1/cells` shows. Two
 * derivations from the same members are deeply equal, which is what makes a repeated reconcile
 * publish nothing.
 */
export interface CellState {
  /** The loop's parent key, `namespace/id`. */
  key: ParentKey;
  namespace: string;
  pool: string;
  id: string;
  /** Pods a complete cell has, from the size annotation; `null` when the cell does not say. */
  size: number | null;
  alive: boolean;
  /** Empty exactly when `alive`. */
  whyNotAlive: NotAliveReason[];
  /** Changes whenever a consumer must reconnect: a replaced pod, a restart, a pod terminating. */
  generation: string;
  /** Name of the worker-index-0 pod, the one clients talk to. */
  leader: string | null;
  /**
   * `leaderIP:port` of the container port named by `--port-name` (the IP in canonical form);
   * `null` until both are known.
   */
  address: string | null;
  /**
   * The address may be routed to: it is known, a valid endpoint IP, and no other alive cell claims
   * it. Independent of `alive`: a cell is in the desired state when both hold.
   */
  routable: boolean;
  /** Empty exactly when `routable`. */
  whyNotRoutable: NotRoutableReason[];
  /**
   * The leader's bootstrap port (`--sglang-bootstrap-port-annotation`), read only for a cell of a
   * prefill pool: a prefill router worker needs it. `null` for every other cell, and for a prefill
   * cell without a valid one (which is then not routable: `NoBootstrapPort`).
   */
  bootstrapPort: number | null;
  /** In worker-index order (unreadable indices last), then by name. */
  members: CellMember[];
}

/**
 * The flags that decide how members are judged: which labels name the pool and the index, which
 * port forms the address, and which addresses and pools get the stricter or looser routing rules.
 */
export interface CellStateOptions {
  labels: PoolLabels;
  /** Name of the leader's container port that forms the address. */
  portName: string;
  /**
   * Loopback addresses are routable (`--sink-allow-loopback`: engines and router on one host).
   * Link-local and unspecified addresses are refused either way.
   */
  allowLoopback?: boolean | undefined;
  /**
   * Pools some router takes as prefill workers (`--sglang-router POOL=URL,role=prefill`): their
   * cells are routable only with a bootstrap port. Empty by default.
   */
  prefillPools?: ReadonlySet<string> | undefined;
  /** The leader annotation holding a prefill cell's bootstrap port; default smg's own key. */
  bootstrapPortAnnotation?: string | undefined;
  /**
   * The cell readiness gate's condition type when the gate is on (`--cell-readiness-gate`): a pod
   * naming it in `spec.readinessGates` is judged without its own `Ready` (`countsAsReady`).
   */
  readinessGate?: string | undefined;
}

/**
 * The largest cell size the annotation may declare: 150,000, Kubernetes' documented ceiling on
 * pods in one cluster ("Considerations for large clusters"). LeaderWorkerSet itself only bounds
 * `replicas × size` by int32, which is no bound at all here, and anyone who may create a pod may
 * write the annotation: a declared size no supported cluster can hold is never met, so it is
 * refused (`SizeInvalid`) rather than reported as that many missing workers. Nothing here costs
 * O(size) in any case (missing indices are computed as ranges from the members present).
 */
export const MAX_CELL_SIZE = 150_000;

/**
 * Pods or indices one why-not reason lists (in `pods`/`indices` and, as ranges, in its message):
 * 16 names every member of any realistic engine group, and keeps a reason about a cell of
 * thousands of pods a few hundred bytes, as it is copied into every event, log line, response and
 * readiness-gate message that shows the cell.
 */
export const MAX_LISTED_PER_REASON = 16;

/** Hex digits of the generation: 64 bits make an accidental repeat between two states negligible. */
export const GENERATION_HEX_LENGTH = 16;

/** The status of the pod's condition `type`; `undefined` when it has none. */
function conditionStatus(pod: Pod, type: string): string | undefined {
  for (const condition of pod.status.conditions) {
    if (condition.type === type) return condition.status;
  }
  return undefined;
}

/** The pod names `conditionType` in `spec.readinessGates`. */
export function carriesReadinessGate(pod: Pod, conditionType: string): boolean {
  return pod.spec.readinessGates?.some((gate) => gate.conditionType === conditionType) ?? false;
}

/**
 * Whether the pod counts as ready for its cell.
 *
 * Without the cell gate: its `Ready` condition, read the way kubectl and endpoint controllers do.
 * With it, `Ready` cannot be used: the kubelet sets `Ready` only once every readiness gate is
 * `True`, and the cell gate becomes `True` only once the cell is alive, which needs its pods
 * ready, so no gated cell would ever come alive. Such a pod counts as ready when `Ready` would be
 * `True` but for the cell gate: phase `Running`, `ContainersReady` `True`, and every other
 * readiness gate `True` (a load balancer's gate still holds it back). Deletion and restarts are
 * judged as for every pod (`PodsDeleting`, the generation).
 */
function countsAsReady(pod: Pod, readinessGate: string | undefined): boolean {
  if (readinessGate === undefined || !carriesReadinessGate(pod, readinessGate)) {
    return conditionStatus(pod, 'Ready') === 'True';
  }
  if (pod.status.phase !== 'Running') return false;
  if (conditionStatus(pod, 'ContainersReady') !== 'True') return false;
  for (const gate of pod.spec.readinessGates ?? []) {
    if (gate.conditionType === readinessGate) continue;
    if (conditionStatus(pod, gate.conditionType) !== 'True') return false;
  }
  return true;
}

/** The cell gate's condition on a pod that carries it; `null` when it does not (or the gate is off). */
function memberGate(pod: Pod, readinessGate: string | undefined): MemberReadinessGate | null {
  if (readinessGate === undefined || !carriesReadinessGate(pod, readinessGate)) return null;
  const condition = pod.status.conditions.find((c) => c.type === readinessGate);
  return {
    status: boundOptionalPodText(condition?.status) ?? null,
    reason: boundOptionalPodText(condition?.reason) ?? null,
  };
}

/**
 * The member view of one pod; also what `/api/v1/store?objects=true` shows per pod.
 * `readinessGate` is the cell gate's condition type when the gate is on.
 */
export function memberOf(pod: Pod, labels: PoolLabels, readinessGate?: string): CellMember {
  const rawIndex = pod.metadata.labels[labels.workerIndex];
  // `phase`, `podIP` and `nodeName` are absent until the API server sets them (a pod not yet
  // scheduled or started); the member view shows that as `null`.
  const status: { phase?: string | undefined; podIP?: string | undefined; conditions: unknown } =
    pod.status;
  const spec: { nodeName?: string | undefined; containers: unknown } = pod.spec;
  return {
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    // Texts from the pod's status and spec are bounded (pod-text.ts): each is copied into
    // every event, log line and response that shows the cell.
    phase: boundOptionalPodText(status.phase) ?? null,
    ready: countsAsReady(pod, readinessGate),
    podIP: boundOptionalPodText(status.podIP) ?? null,
    restarts: pod.status.containerStatuses.reduce((sum, c) => sum + c.restartCount, 0),
    deleting: pod.metadata.deletionTimestamp !== undefined,
    // Absent means 0: a one-pod cell (or a workload without the label) is its own leader.
    workerIndex: rawIndex === undefined ? 0 : (parseIndex(rawIndex) ?? null),
    node: boundOptionalPodText(spec.nodeName) ?? null,
    readinessGate: memberGate(pod, readinessGate),
  };
}

function byWorkerIndex(a: CellMember, b: CellMember): number {
  const ai = a.workerIndex ?? Number.POSITIVE_INFINITY;
  const bi = b.workerIndex ?? Number.POSITIVE_INFINITY;
  if (ai !== bi) return ai < bi ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * 16 hex of sha256 over `name:uid:restarts:deleting`, one line per member in worker-index order,
 * with `:stale` added to the line of a member of another incarnation (`stale`, by name).
 * Readiness is deliberately left out: a readiness blip is not a new process, but a new uid, a
 * container restart or the start of a termination each mean in-memory state (KV cache, NCCL
 * communicators) is gone, so consumers holding connections must redo them; so is a group whose
 * members came from two incarnations, even once the stale one is the only change.
 */
export function cellGeneration(
  members: readonly CellMember[],
  stale: ReadonlySet<string> = new Set(),
): string {
  const text = members
    .map(
      (m) => `${m.name}:${m.uid}:${m.restarts}:${m.deleting}${stale.has(m.name) ? ':stale' : ''}`,
    )
    .join('\n');
  return createHash('sha256').update(text).digest('hex').slice(0, GENERATION_HEX_LENGTH);
}

/** A pod's creation time in epoch milliseconds; `undefined` when absent or unreadable. */
function createdAt(pod: Pod): number | undefined {
  const text = pod.metadata.creationTimestamp;
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The worker StatefulSet that controls an LWS worker: its controller owner reference, when that
 * is a StatefulSet named after the leader pod (LWS names each group's worker StatefulSet after
 * its leader); `undefined` for any other pod.
 */
function workerStatefulSetUid(pod: Pod, leaderName: string): string | undefined {
  for (const owner of pod.metadata.ownerReferences ?? []) {
    if (owner.controller && owner.kind === 'StatefulSet' && owner.name === leaderName) {
      return owner.uid;
    }
  }
  return undefined;
}

/**
 * The members of an LWS group that belong to another incarnation than its leader, by name, with
 * why; empty for a cell that is not an LWS group (no leader, or a leader without LWS's template
 * revision label: plain labelled pods keep the rules they had).
 *
 * LWS's own rule is exact and needs the StatefulSets: a worker belongs to a leader when its
 * worker StatefulSet is owned by the leader's uid. From the pods alone, three rules, each of which
 * never calls a member of the current incarnation stale (docs/alignment.md weighs them):
 * - the worker's template revision differs from the leader's (a rolling update; LWS itself
 *   treats such a worker as about to be deleted);
 * - the worker is an LWS worker (controlled by the StatefulSet named after the leader) created in
 *   an earlier second than the leader: the worker StatefulSet of an incarnation is made only once
 *   its leader exists, so its pods are never older. Misses a stale worker created in the same
 *   second as the new leader (an incarnation that lived under a second);
 * - the LWS workers are controlled by worker StatefulSets of different uids: every set but the
 *   one holding the most recently created worker is stale (all are, when that cannot be told).
 */
function staleMembers(
  entries: ReadonlyArray<{ pod: Pod; member: CellMember }>,
  leader: { pod: Pod; member: CellMember } | undefined,
): Map<string, string> {
  const stale = new Map<string, string>();
  if (!leader) return stale;
  const leaderRevision = leader.pod.metadata.labels[LWS_TEMPLATE_REVISION_LABEL];
  if (leaderRevision === undefined) return stale;
  const leaderName = leader.pod.metadata.name;
  const leaderCreated = createdAt(leader.pod);
  const mark = (name: string, why: string): void => {
    if (!stale.has(name)) stale.set(name, why);
  };
  const bySet = new Map<string, Array<{ name: string; created: number | undefined }>>();
  for (const { pod, member } of entries) {
    if (pod === leader.pod) continue;
    const revision = pod.metadata.labels[LWS_TEMPLATE_REVISION_LABEL];
    if (revision !== undefined && revision !== leaderRevision) {
      mark(
        member.name,
        `its template revision ${boundPodText(revision)} is not the leader's ${boundPodText(leaderRevision)}`,
      );
    }
    const setUid = workerStatefulSetUid(pod, leaderName);
    if (setUid === undefined) continue;
    const created = createdAt(pod);
    if (created !== undefined && leaderCreated !== undefined && created < leaderCreated) {
      mark(
        member.name,
        `it was created at ${boundPodText(pod.metadata.creationTimestamp ?? '')}, before the leader (${boundPodText(leader.pod.metadata.creationTimestamp ?? '')})`,
      );
    }
    const set = bySet.get(setUid) ?? [];
    set.push({ name: member.name, created });
    bySet.set(setUid, set);
  }
  if (bySet.size > 1) {
    const newest = (set: ReadonlyArray<{ created: number | undefined }>): number =>
      Math.max(...set.map((w) => w.created ?? Number.NEGATIVE_INFINITY));
    const ranked = [...bySet.values()].map((set) => ({ set, newest: newest(set) }));
    const top = Math.max(...ranked.map((r) => r.newest));
    const current = ranked.filter((r) => r.newest === top);
    const keep = current.length === 1 && Number.isFinite(top) ? current[0]?.set : undefined;
    for (const { set } of ranked) {
      if (set === keep) continue;
      for (const worker of set) {
        mark(
          worker.name,
          keep
            ? 'it is controlled by an older worker StatefulSet than its newest fellow worker'
            : 'the workers are controlled by different worker StatefulSets',
        );
      }
    }
  }
  return stale;
}

/** `ip:port`, with IPv6 addresses bracketed so the result is always a valid URL authority. */
function formatAddress(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The first container port called `portName` across the pod's containers. */
function namedPort(pod: Pod, portName: string): number | undefined {
  for (const container of pod.spec.containers) {
    for (const port of container.ports) {
      if (port.name === portName) return port.containerPort;
    }
  }
  return undefined;
}

/**
 * The leader's address and why it cannot be routed to, judged on the cell alone (an address
 * claimed twice is the registry's finding, since it needs every cell). A pod IP that is not an IP
 * is kept, bounded, in the address so the cell shows what its pod said.
 */
function leaderAddress(
  leader: { pod: Pod; member: CellMember } | undefined,
  options: CellStateOptions,
): { address: string | null; whyNotRoutable: NotRoutableReason[] } {
  if (!leader) {
    return {
      address: null,
      whyNotRoutable: [
        { reason: 'NoServingPort', message: 'the cell has no leader pod (worker index 0)' },
      ],
    };
  }
  const port = namedPort(leader.pod, options.portName);
  if (port === undefined) {
    return {
      address: null,
      whyNotRoutable: [
        {
          reason: 'NoServingPort',
          message: `leader ${leader.member.name} has no container port named ${JSON.stringify(options.portName)} (--port-name)`,
        },
      ],
    };
  }
  const podIP = leader.member.podIP;
  if (!podIP) {
    return {
      address: null,
      whyNotRoutable: [
        { reason: 'NoServingPort', message: `leader ${leader.member.name} has no pod IP yet` },
      ],
    };
  }
  const parsed = parseIp(podIP);
  if (!parsed) {
    return {
      address: formatAddress(podIP, port),
      whyNotRoutable: [
        {
          reason: 'AddressInvalid',
          message: `leader ${leader.member.name}'s pod IP ${JSON.stringify(podIP)} is not an IP address`,
        },
      ],
    };
  }
  const address = formatAddress(parsed.ip, port);
  const refusal = ipRefusal(parsed);
  if (refusal !== undefined && !(refusal === 'loopback' && options.allowLoopback)) {
    return {
      address,
      whyNotRoutable: [
        {
          reason: 'AddressInvalid',
          message: `address ${address} is ${refusal}${refusal === 'loopback' ? ' (allowed only with --sink-allow-loopback)' : ''}; no sink routes to it`,
        },
      ],
    };
  }
  return { address, whyNotRoutable: [] };
}

/**
 * A prefill cell's bootstrap port from its leader's annotation, or the reason it has none. Without
 * a leader there is nothing to read, and `NoServingPort` already says so.
 */
function prefillBootstrapPort(
  leader: { pod: Pod; member: CellMember } | undefined,
  options: CellStateOptions,
): { port: number | null; reason?: NotRoutableReason } {
  if (!leader) return { port: null };
  const annotation = options.bootstrapPortAnnotation ?? DEFAULT_BOOTSTRAP_PORT_ANNOTATION;
  const raw = leader.pod.metadata.annotations[annotation];
  const reading = parseBootstrapPort(raw);
  if (reading.port !== undefined) return { port: reading.port };
  const message =
    reading.problem === 'missing'
      ? `leader ${leader.member.name} has no annotation ${annotation} (--sglang-bootstrap-port-annotation); a prefill worker needs its bootstrap port`
      : `leader ${leader.member.name}'s annotation ${annotation}=${JSON.stringify(boundPodText(raw ?? ''))} is not a port (1-65535)`;
  return { port: null, reason: { reason: 'NoBootstrapPort', message } };
}

/** A positive integer annotation value no larger than `MAX_CELL_SIZE`, or `undefined`. */
function parseSize(value: string): number | undefined {
  const size = parseIndex(value);
  return size !== undefined && size > 0 && size <= MAX_CELL_SIZE ? size : undefined;
}

/** `a, b and c` for messages. */
function listOf(items: readonly (string | number)[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * `a, b and c`, or, past `MAX_LISTED_PER_REASON` items, the first ones and `and N more`, with `N`
 * counted in `total` (the items listed may be fewer than the items concerned).
 */
function boundedListOf(items: readonly (string | number)[], total: number): string {
  const listed = items.slice(0, MAX_LISTED_PER_REASON);
  const more = total - listed.length;
  return more > 0 ? `${listed.join(', ')} and ${more} more` : listOf(listed);
}

/** The listed part of `items` and how many were left out, as a reason carries them. */
function listed<T>(items: readonly T[]): { items: T[]; omitted?: number } {
  if (items.length <= MAX_LISTED_PER_REASON) return { items: [...items] };
  return {
    items: items.slice(0, MAX_LISTED_PER_REASON),
    omitted: items.length - MAX_LISTED_PER_REASON,
  };
}

/** A reason about pods: the first names listed, the rest counted. */
function podsReason(
  reason: NotAliveReasonCode,
  names: readonly string[],
  predicate: (one: boolean) => string,
): NotAliveReason {
  const { items, omitted } = listed(names);
  return {
    reason,
    message: `${boundedListOf(items, names.length)} ${predicate(names.length === 1)}`,
    pods: items,
    ...(omitted !== undefined ? { omitted } : {}),
  };
}

/** An inclusive run of worker indices. */
interface IndexRange {
  first: number;
  last: number;
}

/**
 * The indices in `0..size-1` that no member holds, as ranges in order, given the distinct indices
 * held in ascending order: the first `MAX_LISTED_PER_REASON` ranges and the count of every missing
 * index. O(members), whatever the size.
 */
function missingRanges(
  held: readonly number[],
  size: number,
): { ranges: IndexRange[]; count: number; rangeCount: number } {
  const ranges: IndexRange[] = [];
  let count = 0;
  let rangeCount = 0;
  let next = 0;
  const gap = (first: number, last: number): void => {
    count += last - first + 1;
    rangeCount += 1;
    if (ranges.length < MAX_LISTED_PER_REASON) ranges.push({ first, last });
  };
  for (const index of held) {
    if (index >= size) break;
    if (index > next) gap(next, index - 1);
    next = index + 1;
  }
  if (next < size) gap(next, size - 1);
  return { ranges, count, rangeCount };
}

/** `3`, `3-7`. */
function rangeText(range: IndexRange): string {
  return range.first === range.last ? `${range.first}` : `${range.first}-${range.last}`;
}

/** The `IndicesMissing` reason: ranges in the message, the first indices listed, the rest counted. */
function missingReason(held: readonly number[], size: number): NotAliveReason | undefined {
  const { ranges, count, rangeCount } = missingRanges(held, size);
  if (count === 0) return undefined;
  const indices: number[] = [];
  for (const range of ranges) {
    for (let i = range.first; i <= range.last && indices.length < MAX_LISTED_PER_REASON; i += 1) {
      indices.push(i);
    }
    if (indices.length === MAX_LISTED_PER_REASON) break;
  }
  const texts = ranges.map(rangeText);
  const shown =
    rangeCount > ranges.length
      ? `${texts.join(', ')} and ${rangeCount - ranges.length} more ranges (${count} indices in all)`
      : listOf(texts);
  const one = count === 1;
  return {
    reason: 'IndicesMissing',
    message: `worker ${one ? 'index' : 'indices'} ${shown} of ${size} ${one ? 'is' : 'are'} missing`,
    indices,
    ...(count > indices.length ? { omitted: count - indices.length } : {}),
  };
}

/** A reason about indices (`indices` ascending): the first listed, the rest counted. */
function indicesReason(
  reason: NotAliveReasonCode,
  indices: readonly number[],
  predicate: (one: boolean) => string,
): NotAliveReason {
  const { items, omitted } = listed(indices);
  const one = indices.length === 1;
  return {
    reason,
    message: `worker ${one ? 'index' : 'indices'} ${boundedListOf(items, indices.length)} ${predicate(one)}`,
    indices: items,
    ...(omitted !== undefined ? { omitted } : {}),
  };
}

/**
 * The state of the cell `key` given its members; `undefined` when it has none (the cell is gone).
 *
 * Alive means: every member Ready, none deleting, every worker index readable, and, when the
 * cell declares a size, the worker indices are exactly 0..size−1 (no gap, no extra, no duplicate).
 * Each rule that fails adds one reason, so a user sees every problem at once.
 */
export function deriveCellState(
  key: ParentKey,
  pods: readonly Pod[],
  options: CellStateOptions,
): CellState | undefined {
  if (pods.length === 0) return undefined;
  const { labels } = options;
  const entries = pods.map((pod) => ({
    pod,
    member: memberOf(pod, labels, options.readinessGate),
  }));
  entries.sort((a, b) => byWorkerIndex(a.member, b.member));
  const members = entries.map((e) => e.member);

  const leaderEntry = entries.find((e) => e.member.workerIndex === 0);
  const reference = (leaderEntry ?? entries[0])!.pod;
  const { namespace, id } = splitParentKey(key);
  const pool = boundPodText(reference.metadata.labels[labels.pool] ?? '');

  const whyNotAlive: NotAliveReason[] = [];
  const notReady = members.filter((m) => !m.ready).map((m) => m.name);
  if (notReady.length > 0) {
    whyNotAlive.push(
      podsReason('PodsNotReady', notReady, (one) => `${one ? 'is' : 'are'} not ready`),
    );
  }
  const deleting = members.filter((m) => m.deleting).map((m) => m.name);
  if (deleting.length > 0) {
    whyNotAlive.push(
      podsReason('PodsDeleting', deleting, (one) => `${one ? 'is' : 'are'} terminating`),
    );
  }
  const badIndex = members.filter((m) => m.workerIndex === null).map((m) => m.name);
  if (badIndex.length > 0) {
    whyNotAlive.push(
      podsReason(
        'WorkerIndexInvalid',
        badIndex,
        (one) => `${one ? 'has' : 'have'} an unreadable ${labels.workerIndex} label`,
      ),
    );
  }

  const stale = staleMembers(entries, leaderEntry);
  if (stale.size > 0) {
    const names = [...stale.keys()];
    const reason = podsReason(
      'StaleMember',
      names,
      (one) => `${one ? 'belongs' : 'belong'} to a previous leader`,
    );
    const [firstName, firstWhy] = [...stale.entries()][0]!;
    reason.message += names.length === 1 ? `: ${firstWhy}` : ` (${firstName}: ${firstWhy})`;
    whyNotAlive.push(reason);
  }

  // The leader's annotation wins: LWS stamps the same size on every pod of a group.
  const sizeSource =
    leaderEntry?.pod ?? entries.find((e) => labels.cellSize in e.pod.metadata.annotations)?.pod;
  const rawSize = sizeSource?.metadata.annotations[labels.cellSize];
  let size: number | null = null;
  if (rawSize !== undefined) {
    const parsed = parseSize(rawSize);
    if (parsed === undefined) {
      whyNotAlive.push({
        reason: 'SizeInvalid',
        message: `annotation ${labels.cellSize}=${JSON.stringify(boundPodText(rawSize))} is not an integer from 1 to ${MAX_CELL_SIZE}`,
      });
    } else {
      size = parsed;
    }
  }
  if (size !== null) {
    // Members are in worker-index order, so the held indices come out ascending: every rule
    // below is O(members), never O(size) or O(index).
    const held: number[] = [];
    const duplicated: number[] = [];
    for (const m of members) {
      if (m.workerIndex === null) continue;
      const previous = held.at(-1);
      if (previous === m.workerIndex) {
        if (duplicated.at(-1) !== m.workerIndex) duplicated.push(m.workerIndex);
      } else {
        held.push(m.workerIndex);
      }
    }
    const cellSize = size;
    const missing = missingReason(held, cellSize);
    if (missing) whyNotAlive.push(missing);
    const unexpected = held.filter((i) => i >= cellSize);
    if (unexpected.length > 0) {
      whyNotAlive.push(
        indicesReason(
          'IndicesUnexpected',
          unexpected,
          (one) => `${one ? 'is' : 'are'} beyond the cell size ${cellSize}`,
        ),
      );
    }
    if (duplicated.length > 0) {
      whyNotAlive.push(
        indicesReason(
          'IndicesDuplicated',
          duplicated,
          (one) => `${one ? 'is' : 'are'} held by more than one pod`,
        ),
      );
    }
  }

  const { address, whyNotRoutable } = leaderAddress(leaderEntry, options);
  let bootstrapPort: number | null = null;
  if (options.prefillPools?.has(pool)) {
    const bootstrap = prefillBootstrapPort(leaderEntry, options);
    bootstrapPort = bootstrap.port;
    if (bootstrap.reason) whyNotRoutable.push(bootstrap.reason);
  }

  return {
    key,
    namespace,
    pool,
    id,
    size,
    alive: whyNotAlive.length === 0,
    whyNotAlive,
    generation: cellGeneration(members, new Set(stale.keys())),
    leader: leaderEntry?.member.name ?? null,
    address,
    routable: whyNotRoutable.length === 0,
    whyNotRoutable,
    bootstrapPort,
    members,
  };
}
