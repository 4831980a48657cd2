/**
 * The workload a pool belongs to, as the neutral model holds it: how many cells it asks for and
 * what it says about itself. Today that is a LeaderWorkerSet (`spec.replicas` groups, its status'
 * `readyReplicas` and conditions); the shape names no Kubernetes type, so the domain
 * (`src/pools/pool-capacity.ts`) compares a pool with its workload without importing Kubernetes
 * code, and a simulated world can supply workloads as it supplies pods.
 *
 * `parseLeaderWorkerSet` reads one LWS object (JSON, as LIST and WATCH return it) into that shape,
 * keeping only what the comparison needs and refusing what cannot be a LWS, with a message that
 * says which field is wrong.
 */
import type { Source } from '../runtime/source-event.js';

/**
 * The most cells a workload may ask for. Cell ids pad their index to 5 digits
 * (`CELL_INDEX_DIGITS`), so 100,000 is the most cells that sort in index order; a LWS asking for
 * more is refused as malformed rather than turned into that many placeholder cells.
 */
export const MAX_DESIRED_CELLS = 100_000;

/** Conditions kept per workload: LWS sets three; more is not a LWS the controller understands. */
const MAX_WORKLOAD_CONDITIONS = 16;

/** Longest condition message kept (characters): one line on a status page, not a log dump. */
export const MAX_CONDITION_MESSAGE_LENGTH = 1_024;

/** One condition of the workload's status, as the API shows it; absent fields are `null`. */
export interface WorkloadCondition {
  type: string;
  status: string;
  reason: string | null;
  message: string | null;
  lastTransitionTime: string | null;
}

/** A pool's workload: what it asks for and what it reports, as read from the API server. */
export interface Workload {
  namespace: string;
  name: string;
  /** `metadata.uid`: what an Event regarding the workload names, so `kubectl describe` finds it. */
  uid: string | null;
  /** `spec.replicas`: the cells (LWS groups) the workload asks for. */
  desiredCells: number;
  /** `status.readyReplicas`: the groups the workload itself counts as ready; `null` before it says. */
  readyReplicas: number | null;
  conditions: WorkloadCondition[];
}

/** A LWS object that cannot be read; the message names the object and the field. */
export class MalformedWorkloadError extends Error {
  override readonly name = 'MalformedWorkloadError';
}

/**
 * Where the workload API stands, for logs, `/api/v1/pools` and the pools' `Unknown` reason:
 * `pending` before the first answer, `available` while listed and watched, `not-served` when the
 * API server has no such resource (the CRD is not installed), `forbidden` when the controller may
 * not list it, `failing` when it fails otherwise (retried), `disabled` when the watch is off.
 */
export type WorkloadApiState =
  | 'pending'
  | 'available'
  | 'not-served'
  | 'forbidden'
  | 'failing'
  | 'disabled';

/** `WorkloadApiState` with the sentence that explains it (never a credential or a file's text). */
export interface WorkloadApiStatus {
  state: WorkloadApiState;
  message: string;
}

/**
 * A workload source as the service holds it, shaped like `PodSource`: a stream for a reconcile
 * loop of its own, the API's status, and a way to stop it.
 */
export interface WorkloadSource {
  readonly source: Source<Workload>;
  /** Cheap and synchronous. */
  status(): WorkloadApiStatus;
  /** Ends open streams; idempotent. */
  close(): Promise<void>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function count(
  value: unknown,
  field: string,
  where: string,
  fallback: number | null,
): number | null {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new MalformedWorkloadError(`${where}: ${field} is not a non-negative integer`);
  }
  return value;
}

/**
 * Reads one LeaderWorkerSet (JSON) into a `Workload`. `spec.replicas` absent is 1 (the CRD's
 * default); above `MAX_DESIRED_CELLS`, negative or fractional is refused. Conditions beyond
 * `MAX_WORKLOAD_CONDITIONS` are dropped, messages cut to `MAX_CONDITION_MESSAGE_LENGTH`.
 */
export function parseLeaderWorkerSet(value: unknown): Workload {
  if (!isObject(value) || !isObject(value.metadata)) {
    throw new MalformedWorkloadError('LeaderWorkerSet: no metadata');
  }
  const { name, namespace } = value.metadata;
  if (typeof name !== 'string' || name === '' || typeof namespace !== 'string') {
    throw new MalformedWorkloadError(
      'LeaderWorkerSet: metadata.name or metadata.namespace missing',
    );
  }
  const where = `LeaderWorkerSet ${namespace}/${name}`;
  const spec = isObject(value.spec) ? value.spec : {};
  const status = isObject(value.status) ? value.status : {};
  const desiredCells = count(spec.replicas, 'spec.replicas', where, 1)!;
  if (desiredCells > MAX_DESIRED_CELLS) {
    throw new MalformedWorkloadError(
      `${where}: spec.replicas ${desiredCells} is more than the ${MAX_DESIRED_CELLS} cells a pool may have`,
    );
  }
  const readyReplicas = count(status.readyReplicas, 'status.readyReplicas', where, null);
  const rawConditions = Array.isArray(status.conditions) ? status.conditions : [];
  const conditions: WorkloadCondition[] = [];
  for (const raw of rawConditions.slice(0, MAX_WORKLOAD_CONDITIONS)) {
    if (!isObject(raw) || typeof raw.type !== 'string' || typeof raw.status !== 'string') continue;
    const message = optionalString(raw.message);
    conditions.push({
      type: raw.type,
      status: raw.status,
      reason: optionalString(raw.reason),
      message:
        message !== null && message.length > MAX_CONDITION_MESSAGE_LENGTH
          ? `${message.slice(0, MAX_CONDITION_MESSAGE_LENGTH)}…`
          : message,
      lastTransitionTime: optionalString(raw.lastTransitionTime),
    });
  }
  const uid = typeof value.metadata.uid === 'string' ? value.metadata.uid : null;
  return { namespace, name, uid, desiredCells, readyReplicas, conditions };
}
