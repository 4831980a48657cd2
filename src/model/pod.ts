/**
 * The partial Pod view: only the fields this project reads, validated at the edge.
 *
 * Validating here (in the reflector's worker thread) means a wrongly typed field is one clear
 * error at the boundary instead of an `undefined` deep inside a cell view, and dropping every
 * field we do not read is what keeps the cache small: a pod as the API server sends it is ~5 KB,
 * most of it `managedFields` and container specs we never look at.
 *
 * Validation and shaping are two steps on purpose. The zod schema checks types and strips unknown
 * fields, and has no transforms, so zod can compile it into its fast path (transforms made it about
 * five times slower: half a second of worker time per 10,000 pods). A hand-written pass then turns
 * the API server's `null`s into `{}` / `[]` / absent and builds the compact objects below, with no
 * `undefined`-valued keys, so each cached pod and each message carrying it stays small.
 *
 * The schema is written with zod/mini, zod's tree-shakable entry point (the same checks, rules
 * and, with the English locale set below, the same messages): the reflector's worker thread loads
 * this module before its first request, and the full zod was 750 KB of that thread's 900 KB script
 * and about 60 ms of its start; zod/mini's part is a few dozen KB.
 *
 * Size: the partial Pod view's types, its one wire schema, the fast conformance check beside it
 * (they must agree field for field, which a test checks), and the trimming to the fields read.
 */
import { en } from 'zod/locales';
import * as z from 'zod/mini';

// zod/mini carries no messages of its own; English ones, as the full zod (the main thread's) sets.
z.config(en());

/** A pod as this project sees it: the validated, trimmed view. Plain data, JSON- and clone-safe. */
export interface Pod {
  metadata: PodMetadata;
  spec: PodSpec;
  status: PodStatus;
}

/**
 * The subset of `ObjectMeta` this project reads: identity (name, namespace, uid), the cursor
 * (`resourceVersion`), creation and termination (`creationTimestamp`, `deletionTimestamp`), the
 * labels and annotations that place a pod in a pool and a cell, and its owners (which
 * incarnation of a LeaderWorkerSet group a worker belongs to). Maps are `{}` rather than absent,
 * so readers never test for `undefined`.
 */
export interface PodMetadata {
  name: string;
  /** `''` for a pod without one (never from the API server, which always sets it). */
  namespace: string;
  uid: string;
  resourceVersion?: string | undefined;
  /** RFC 3339 to the second, as the API server stamps it; absent on a hand-made pod. */
  creationTimestamp?: string | undefined;
  deletionTimestamp?: string | undefined;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /**
   * `metadata.ownerReferences`, present only when the pod has any (like `readinessGates`): an
   * LWS worker's controller is its worker StatefulSet, whose uid tells one incarnation of a group
   * from the next.
   */
  ownerReferences?: OwnerReference[] | undefined;
}

/**
 * An owner reference reduced to what identifies the owner: `controller` is kept only when `true`
 * (the one owner that manages the pod); `apiVersion` and `blockOwnerDeletion` are dropped.
 */
export interface OwnerReference {
  kind: string;
  name: string;
  uid: string;
  controller?: true | undefined;
}

/**
 * The subset of `PodSpec` kept from the wire: `containers` (whose named port forms a cell's
 * address) and `nodeName` (shown per member); `subdomain`, `nodeSelector` and `schedulingGates` are
 * decoded and kept, but nothing in the service reads them today.
 */
export interface PodSpec {
  nodeName?: string | undefined;
  subdomain?: string | undefined;
  nodeSelector: Record<string, string>;
  schedulingGates: Array<{ name: string }>;
  /**
   * The condition types the pod's `Ready` also waits for (`spec.readinessGates`). Present only
   * when the pod has any: most pods have none, and every cached pod stays as small as it was.
   */
  readinessGates?: Array<{ conditionType: string }> | undefined;
  containers: Container[];
}

/** A container reduced to what forms an address: its name and its declared ports. */
export interface Container {
  name: string;
  ports: ContainerPort[];
}

/**
 * A declared container port: a cell's address uses the leader's port whose `name` is `--port-name`.
 */
export interface ContainerPort {
  name?: string | undefined;
  containerPort: number;
  protocol?: string | undefined;
}

/**
 * The subset of `PodStatus` a cell's state is derived from: phase and pod IP (absent until set),
 * the `Ready` condition, and the container statuses whose restart counts enter the generation.
 */
export interface PodStatus {
  phase?: string | undefined;
  podIP?: string | undefined;
  conditions: PodCondition[];
  containerStatuses: ContainerStatus[];
}

/**
 * A pod condition as the API writes it; only `type: 'Ready'` with `status: 'True'` is read (a pod's
 * readiness, as kubectl and the endpoint controllers read it).
 */
export interface PodCondition {
  type: string;
  status: string;
  reason?: string | undefined;
  message?: string | undefined;
  lastTransitionTime?: string | undefined;
}

/**
 * One container's status: `restartCount` is summed into a member's restarts, so a container restart
 * changes the cell's generation.
 */
export interface ContainerStatus {
  name: string;
  /** Absent on the wire reads as `false`: not known to be ready. */
  ready: boolean;
  restartCount: number;
  state?: ContainerState | undefined;
  lastState?: ContainerState | undefined;
}

/**
 * At most one of the three is set, as in the API; kept for the simulated world and the codec's
 * fidelity, not read by the cell rules.
 */
export interface ContainerState {
  waiting?: { reason?: string | undefined; message?: string | undefined } | undefined;
  running?: { startedAt?: string | undefined } | undefined;
  terminated?:
    | {
        exitCode: number;
        reason?: string | undefined;
        message?: string | undefined;
        startedAt?: string | undefined;
        finishedAt?: string | undefined;
      }
    | undefined;
}

/** Absent or `null`: the API server omits empty fields, and clients spell them `null`. */
const text = z.nullish(z.string());
const stringMap = z.nullish(z.record(z.string(), z.string()));
const list = <S extends z.ZodMiniType>(item: S) => z.nullish(z.array(item));
/** An integer, checked as zod's `number().int()` checks it (same rule, same message). */
const integer = () => z.number().check(z.int());

const stateSchema = z.nullish(
  z.object({
    waiting: z.nullish(z.object({ reason: text, message: text })),
    running: z.nullish(z.object({ startedAt: text })),
    terminated: z.nullish(
      z.object({
        exitCode: integer(),
        reason: text,
        message: text,
        startedAt: text,
        finishedAt: text,
      }),
    ),
  }),
);

/** The wire shape of the fields we read: types checked, everything else stripped. */
export const podWireSchema = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: text,
    uid: z.string(),
    resourceVersion: text,
    creationTimestamp: text,
    deletionTimestamp: text,
    labels: stringMap,
    annotations: stringMap,
    ownerReferences: list(
      z.object({ kind: text, name: text, uid: text, controller: z.nullish(z.boolean()) }),
    ),
  }),
  spec: z.nullish(
    z.object({
      nodeName: text,
      subdomain: text,
      nodeSelector: stringMap,
      schedulingGates: list(z.object({ name: z.string() })),
      readinessGates: list(z.object({ conditionType: text })),
      containers: list(
        z.object({
          name: z.string(),
          ports: list(z.object({ name: text, containerPort: integer(), protocol: text })),
        }),
      ),
    }),
  ),
  status: z.nullish(
    z.object({
      phase: text,
      podIP: text,
      conditions: list(
        z.object({
          type: z.string(),
          status: z.string(),
          reason: text,
          message: text,
          lastTransitionTime: text,
        }),
      ),
      containerStatuses: list(
        z.object({
          name: z.string(),
          ready: z.nullish(z.boolean()),
          restartCount: integer(),
          state: stateSchema,
          lastState: stateSchema,
        }),
      ),
    }),
  ),
});

/** A pod as `JSON.parse` gives it, once checked: only the fields we read are typed. */
export type PodWire = z.output<typeof podWireSchema>;
type Wire = PodWire;
type WireState = z.output<typeof stateSchema>;

/** Copies the fields of `source` named in `keys` that hold a string; `null` and absent are dropped. */
function strings<K extends string>(
  source: Partial<Record<K, string | null | undefined>>,
  keys: readonly K[],
): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const key of keys) {
    const value = source[key];
    if (typeof value === 'string') out[key] = value;
  }
  return out;
}

function shapeState(state: WireState): ContainerState | undefined {
  if (!state) return undefined;
  const out: ContainerState = {};
  if (state.waiting) out.waiting = strings(state.waiting, ['reason', 'message']);
  if (state.running) out.running = strings(state.running, ['startedAt']);
  if (state.terminated) {
    out.terminated = {
      exitCode: state.terminated.exitCode,
      ...strings(state.terminated, ['reason', 'message', 'startedAt', 'finishedAt']),
    };
  }
  return out;
}

/**
 * The longest annotation value the cache keeps: 1 KiB. Anyone who may create a pod writes its
 * annotations (256 KiB in all), and every cached pod is held, cloned from the worker thread and
 * compared; the annotations this project reads (a cell size) are a few characters, so a longer
 * value is cut, marked with how much was cut, and stays as invalid as it was.
 */
export const MAX_CACHED_ANNOTATION_LENGTH = 1_024;

/**
 * `annotations` itself, or a copy with every value over the limit cut (the protobuf transcoder,
 * ../kubernetes/codec/protobuf-pod-json.ts, cuts alike as it writes).
 */
function boundAnnotations(annotations: Record<string, string>): Record<string, string> {
  let out: Record<string, string> | undefined;
  for (const key in annotations) {
    const value = annotations[key]!;
    if (value.length <= MAX_CACHED_ANNOTATION_LENGTH) continue;
    out ??= { ...annotations };
    out[key] = boundAnnotation(value);
  }
  return out ?? annotations;
}

/** One annotation value as the cache keeps it: itself, or cut to the limit and marked. */
export function boundAnnotation(value: string): string {
  return value.length <= MAX_CACHED_ANNOTATION_LENGTH
    ? value
    : `${value.slice(0, MAX_CACHED_ANNOTATION_LENGTH)}… (${value.length - MAX_CACHED_ANNOTATION_LENGTH} more characters)`;
}

type WireOwnerReference = NonNullable<Wire['metadata']['ownerReferences']>[number];

/** An owner reference as kept: a missing string reads as `''`, as protobuf's absent field does. */
function shapeOwnerReference(reference: WireOwnerReference): OwnerReference {
  const out: OwnerReference = {
    kind: reference.kind ?? '',
    name: reference.name ?? '',
    uid: reference.uid ?? '',
  };
  if (reference.controller === true) out.controller = true;
  return out;
}

function shape(wire: Wire): Pod {
  const { metadata } = wire;
  const spec = wire.spec ?? {};
  const status = wire.status ?? {};
  return {
    metadata: {
      name: metadata.name,
      namespace: metadata.namespace ?? '',
      uid: metadata.uid,
      ...strings(metadata, ['resourceVersion', 'creationTimestamp', 'deletionTimestamp']),
      // Copies: the value may be the caller's own (see `conformsToPodWire`), and a pod must not change
      // with it.
      labels: metadata.labels ? { ...metadata.labels } : {},
      annotations: metadata.annotations ? boundAnnotations({ ...metadata.annotations }) : {},
      ...(metadata.ownerReferences && metadata.ownerReferences.length > 0
        ? { ownerReferences: metadata.ownerReferences.map(shapeOwnerReference) }
        : {}),
    },
    spec: {
      ...strings(spec, ['nodeName', 'subdomain']),
      nodeSelector: spec.nodeSelector ? { ...spec.nodeSelector } : {},
      schedulingGates: (spec.schedulingGates ?? []).map((gate) => ({ name: gate.name })),
      ...(spec.readinessGates && spec.readinessGates.length > 0
        ? {
            readinessGates: spec.readinessGates.map((gate) => ({
              conditionType: gate.conditionType ?? '',
            })),
          }
        : {}),
      containers: (spec.containers ?? []).map((container) => ({
        name: container.name,
        ports: (container.ports ?? []).map((port) => ({
          ...strings(port, ['name']),
          containerPort: port.containerPort,
          ...strings(port, ['protocol']),
        })),
      })),
    },
    status: {
      ...strings(status, ['phase', 'podIP']),
      conditions: (status.conditions ?? []).map((condition) => ({
        type: condition.type,
        status: condition.status,
        ...strings(condition, ['reason', 'message', 'lastTransitionTime']),
      })),
      containerStatuses: (status.containerStatuses ?? []).map((container) => {
        const out: ContainerStatus = {
          name: container.name,
          ready: container.ready ?? false,
          restartCount: container.restartCount,
        };
        const state = shapeState(container.state);
        if (state) out.state = state;
        const lastState = shapeState(container.lastState);
        if (lastState) out.lastState = lastState;
        return out;
      }),
    },
  };
}

// A hand-written `podWireSchema.safeParse(value).success`, for the common case only: it answers
// true for a subset of what the schema accepts (plain objects and arrays, safe integers, maps
// without a `__proto__` key, which zod's copy would drop), so a value it is unsure of is left to
// zod. Reading without copying is what makes it cheap: zod builds a validated copy of every pod,
// which `shape()` then copies again (about 5 µs a pod in the worker, as much as the trim itself).

type Loose = Record<string, unknown>;

const isObject = (value: unknown): value is Loose =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isText = (value: unknown): boolean =>
  value === undefined || value === null || typeof value === 'string';
const isInteger = (value: unknown): boolean => Number.isSafeInteger(value);
const isOptional = (value: unknown): value is Loose | null | undefined =>
  value === undefined || value === null || isObject(value);

function isStringMap(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (!isObject(value) || Object.hasOwn(value, '__proto__')) return false;
  for (const key in value) if (typeof value[key] !== 'string') return false;
  return true;
}

function isList(value: unknown, item: (entry: Loose) => boolean): boolean {
  if (value === undefined || value === null) return true;
  if (!Array.isArray(value)) return false;
  for (const entry of value) if (!isObject(entry) || !item(entry)) return false;
  return true;
}

function isState(value: unknown): boolean {
  if (!isOptional(value)) return false;
  if (!value) return true;
  const { waiting, running, terminated } = value;
  if (!isOptional(waiting) || (waiting && !(isText(waiting.reason) && isText(waiting.message))))
    return false;
  if (!isOptional(running) || (running && !isText(running.startedAt))) return false;
  if (!isOptional(terminated)) return false;
  return (
    !terminated ||
    (isInteger(terminated.exitCode) &&
      isText(terminated.reason) &&
      isText(terminated.message) &&
      isText(terminated.startedAt) &&
      isText(terminated.finishedAt))
  );
}

/**
 * Whether `value` is a pod the hand-written check accepts (see above): such a pod can be read
 * straight from `value`, as `parsePod` would keep it (../kubernetes/codec/pod-json-writer.ts
 * writes its JSON so, without building the `Pod`). False means only "ask `parsePod`".
 */
export function conformsToPodWire(value: unknown): value is Wire {
  if (!isObject(value)) return false;
  const { metadata, spec, status } = value;
  if (
    !isObject(metadata) ||
    typeof metadata.name !== 'string' ||
    typeof metadata.uid !== 'string' ||
    !isText(metadata.namespace) ||
    !isText(metadata.resourceVersion) ||
    !isText(metadata.creationTimestamp) ||
    !isText(metadata.deletionTimestamp) ||
    !isStringMap(metadata.labels) ||
    !isStringMap(metadata.annotations) ||
    !isList(
      metadata.ownerReferences,
      (reference) =>
        isText(reference.kind) &&
        isText(reference.name) &&
        isText(reference.uid) &&
        (reference.controller === undefined ||
          reference.controller === null ||
          typeof reference.controller === 'boolean'),
    )
  ) {
    return false;
  }
  if (!isOptional(spec) || !isOptional(status)) return false;
  if (
    spec &&
    !(
      isText(spec.nodeName) &&
      isText(spec.subdomain) &&
      isStringMap(spec.nodeSelector) &&
      isList(spec.schedulingGates, (gate) => typeof gate.name === 'string') &&
      isList(spec.readinessGates, (gate) => isText(gate.conditionType)) &&
      isList(
        spec.containers,
        (container) =>
          typeof container.name === 'string' &&
          isList(
            container.ports,
            (port) => isText(port.name) && isInteger(port.containerPort) && isText(port.protocol),
          ),
      )
    )
  ) {
    return false;
  }
  return (
    !status ||
    (isText(status.phase) &&
      isText(status.podIP) &&
      isList(
        status.conditions,
        (condition) =>
          typeof condition.type === 'string' &&
          typeof condition.status === 'string' &&
          isText(condition.reason) &&
          isText(condition.message) &&
          isText(condition.lastTransitionTime),
      ) &&
      isList(
        status.containerStatuses,
        (container) =>
          typeof container.name === 'string' &&
          (container.ready === undefined ||
            container.ready === null ||
            typeof container.ready === 'boolean') &&
          isInteger(container.restartCount) &&
          isState(container.state) &&
          isState(container.lastState),
      ))
  );
}

/** Why a value is not a readable pod, in one line naming the offending fields. */
export class MalformedPodError extends Error {
  override readonly name = 'MalformedPodError';
}

/**
 * Validates and trims one pod. Throws `MalformedPodError` for a pod missing name, uid or a
 * container's restartCount, or with a wrongly typed field: such a pod cannot be attributed or
 * reasoned about, and guessing would publish a wrong world.
 */
export function parsePod(value: unknown): Pod {
  // Nearly every pod conforms: checked by hand (no copy), it goes straight to `shape()`, which
  // copies only the fields it keeps. Anything the check is unsure of goes through zod, whose
  // verdict and error text are the rule.
  if (conformsToPodWire(value)) return shape(value);
  const result = podWireSchema.safeParse(value);
  if (!result.success) {
    const where = result.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '<root>'}: ${issue.message}`)
      .join('; ');
    throw new MalformedPodError(`malformed pod: ${where}`);
  }
  return shape(result.data);
}

/** The store key of a pod: `namespace/name`, client-go's `MetaNamespaceKeyFunc`. */
export function podKey(pod: {
  readonly metadata: Pick<PodMetadata, 'name' | 'namespace'>;
}): string {
  return pod.metadata.namespace
    ? `${pod.metadata.namespace}/${pod.metadata.name}`
    : pod.metadata.name;
}
