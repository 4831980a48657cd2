/**
 * The cell readiness gate sink: every watched pod that names the gate's condition type in
 * `spec.readinessGates` carries that condition, `True` while its cell is alive and routable and
 * `False` with the why-not otherwise (cell-readiness-gate.ts), so `kubectl get pods`, Services,
 * Gateway API backends and InferencePools hold a pod out of rotation until its whole cell is up.
 *
 * Level-triggered like the other sinks: every apply compares each gated pod's condition as the
 * reflector's cache holds it with the wanted one and writes (server-side apply on `pods/status`,
 * pod-condition-api.ts) only those that differ, so an unchanged world writes nothing, a cell that
 * flaps writes each of its gated pods once per flip, and a drift run repairs a condition someone
 * else changed.
 *
 * Two rules keep it from writing what it should not:
 * - A condition is written only where the desired routing state and the cell as published now
 *   agree (a cell that changed since the render is left to the run that change triggers), so a
 *   pod is never flipped to a value its very next run would flip back.
 * - A write the cache has not caught up with yet (the cached pod still has the resourceVersion it
 *   had when the write was sent) is not sent again: the watch will bring it. Once the cache moves
 *   on, what it holds is the truth again, whoever wrote it.
 *
 * `/api/v1/sinks` shows one target per pool (`namespace/pool`): its gated pods' wanted and cached
 * conditions as `pod=Status/Reason`, so the status and metrics grow with pools, not pods.
 *
 * Size: one sink's apply over one per-pod bookkeeping (sent writes, backoff, observe mode); the
 * condition itself is cell-readiness-gate.ts.
 */
import { describeThrown } from '../coordination/pipeline.js';
import type { PodConditionApi } from '../kubernetes/resources/pod-condition-api.js';
import { type Pod, type PodCondition, podKey } from '../model/pod.js';
import { cellGateCondition, type GateCondition } from '../pools/cell-readiness-gate.js';
import { type CellState, carriesReadinessGate } from '../pools/cell-state.js';
import { byString, type RoutingState } from '../pools/routing-state.js';
import { abortReason } from '../runtime/clock.js';
import type { ParentKey } from '../runtime/source-event.js';
import {
  heldError,
  type Sink,
  SinkApplyError,
  type SinkFailure,
  type SinkTargetStatus,
} from './sink.js';
import {
  newTargetRecord,
  type SinkBaseOptions,
  SinkContext,
  type SinkTargetRecord,
} from './sink-context.js';

/** The gate's sink kind, as `/api/v1/sinks` and the sink metrics label it. */
const READINESS_GATE_SINK = 'readiness-gate' as const;

/**
 * Condition writes in flight at once: writes to distinct pods are independent, and 8 turns a
 * rollout of hundreds of gated pods into a second or two of writes while taking only a few of
 * the API server's mutating request slots (200 by default).
 */
const MAX_CONCURRENT_CONDITION_WRITES = 8;

/** Failed pods a target's `lastError` names; more are counted, so the status stays short. */
const MAX_NAMED_FAILED_PODS = 3;

/** One condition write, for the write counters. */
export interface ConditionWriteRecord {
  status: 'True' | 'False';
  result: 'success' | 'error';
}

/** One API call, for `pool_controller_sink_operations_total{sink,target,operation,result}`. */
interface ReadinessGateOperationRecord {
  sink: typeof READINESS_GATE_SINK;
  /** The pool's `namespace/pool`. */
  target: string;
  operation: 'apply';
  result: 'success' | 'error';
}

/**
 * Options of `ReadinessGateSink`: the API, the condition type, and reads of cells and pods. Its
 * backoff is per pod; `wallClock` also stamps `lastTransitionTime`; it publishes `sink.applied`
 * for every condition written and `sink.failed` for every write that failed; observe mode
 * computes and reports the writes and never sends one.
 */
export interface ReadinessGateSinkOptions extends SinkBaseOptions<ReadinessGateOperationRecord> {
  api: PodConditionApi;
  /** The condition type pods name in `spec.readinessGates` (`--cell-readiness-gate-condition`). */
  conditionType: string;
  /** The published cells, read at apply time. */
  cells: () => Iterable<CellState>;
  /** A cell's member pods as the reflector's cache holds them now. */
  pods: (key: ParentKey) => readonly Pod[];
  /** Writes in flight at once; default MAX_CONCURRENT_CONDITION_WRITES. */
  concurrency?: number;
  onWrite?: (record: ConditionWriteRecord) => void;
}

/**
 * One gated pool. Its lists are `pod=Status/Reason`; in observe mode `wouldAdd` holds the
 * conditions apply would write now and `wouldRemove` those they would replace, as the pods hold
 * them.
 */
interface PoolTarget extends SinkTargetRecord {
  namespace: string;
}

/** A write sent whose result the cache may not show yet. */
interface SentWrite {
  uid: string;
  /** The cached pod's resourceVersion when the write was sent. */
  resourceVersionBefore: string | undefined;
  condition: GateCondition;
}

interface Job {
  pod: Pod;
  key: string;
  poolKey: string;
  pool: string;
  want: GateCondition;
  actual: PodCondition | undefined;
}

function conditionText(status: string, reason: string | undefined): string {
  return reason ? `${status}/${reason}` : status;
}

function sameCondition(actual: PodCondition | undefined, want: GateCondition): boolean {
  return (
    actual !== undefined &&
    actual.status === want.status &&
    (actual.reason ?? '') === want.reason &&
    (actual.message ?? '') === want.message
  );
}

/**
 * The cell readiness gate as a sink (see the header): the coordinator's one pipeline drives it,
 * so it writes only as the leader, only after a render, and backs off per pod like any target.
 */
export class ReadinessGateSink implements Sink {
  readonly kind = READINESS_GATE_SINK;
  readonly #options: ReadinessGateSinkOptions;
  /** Its backoff is by pod key. */
  readonly #sink: SinkContext<ReadinessGateOperationRecord>;
  readonly #concurrency: number;
  /** By pod key: writes the cache may not show yet. Only pods seen in the last apply. */
  #sent = new Map<string, SentWrite>();
  /** By `namespace/pool`: every pool with a gated pod at the last apply. */
  #targets = new Map<string, PoolTarget>();
  /** By pod key: the last error of a pod whose last write failed. */
  #podErrors = new Map<string, string>();

  constructor(options: ReadinessGateSinkOptions) {
    this.#options = options;
    this.#concurrency = options.concurrency ?? MAX_CONCURRENT_CONDITION_WRITES;
    if (!(Number.isInteger(this.#concurrency) && this.#concurrency > 0)) {
      throw new RangeError(`concurrency ${this.#concurrency} must be a positive integer`);
    }
    this.#sink = new SinkContext(READINESS_GATE_SINK, options);
  }

  async apply(desired: RoutingState, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortReason(signal);
    const sink = this.#sink;
    const { conditionType } = this.#options;
    const routed = new Set<string>();
    for (const pool of desired.pools) {
      for (const cell of pool.cells) routed.add(`${pool.namespace}/${cell.cell}`);
    }

    const targets = new Map<string, PoolTarget>();
    const seen = new Set<string>();
    const jobs: Job[] = [];
    const failures: SinkFailure[] = [];
    const heldPods = new Map<string, string[]>();
    for (const cell of this.#options.cells()) {
      const gated = this.#options
        .pods(cell.key)
        .filter((p) => carriesReadinessGate(p, conditionType));
      if (gated.length === 0) continue;
      const poolKey = `${cell.namespace}/${cell.pool}`;
      let target = targets.get(poolKey);
      if (!target) {
        const previous = this.#targets.get(poolKey);
        target = {
          ...newTargetRecord(cell.pool),
          namespace: cell.namespace,
          lastAppliedAt: previous?.lastAppliedAt ?? null,
        };
        targets.set(poolKey, target);
      }
      const want = cellGateCondition(cell);
      // The render and the cell as published now disagree: the change between them has its own run.
      const agrees = (want.status === 'True') === routed.has(`${cell.namespace}/${cell.id}`);
      for (const pod of gated) {
        const key = podKey(pod);
        seen.add(key);
        const actual = pod.status.conditions.find((c) => c.type === conditionType);
        target.desired.push(`${pod.metadata.name}=${conditionText(want.status, want.reason)}`);
        if (actual) {
          target.actual.push(`${pod.metadata.name}=${conditionText(actual.status, actual.reason)}`);
        }
        if (!agrees) continue;
        if (sameCondition(actual, want)) {
          this.#sent.delete(key);
          this.#podErrors.delete(key);
          sink.backoff.succeeded(key);
          continue;
        }
        const sent = this.#sent.get(key);
        if (
          sent &&
          sent.uid === pod.metadata.uid &&
          sent.resourceVersionBefore === pod.metadata.resourceVersion &&
          sent.condition.status === want.status &&
          sent.condition.reason === want.reason &&
          sent.condition.message === want.message
        ) {
          continue; // written; the cache has not caught up yet
        }
        const until = sink.backoff.heldUntil(key);
        if (until !== undefined) {
          const held = heldPods.get(poolKey) ?? [];
          held.push(pod.metadata.name);
          heldPods.set(poolKey, held);
          continue;
        }
        jobs.push({ pod, key, poolKey, pool: cell.pool, want, actual });
      }
    }
    for (const target of targets.values()) {
      target.desired.sort(byString);
      target.actual.sort(byString);
    }
    if (sink.mode === 'observe') {
      // A dry run: every write this apply would send is reported, none is sent.
      for (const job of jobs) {
        const target = targets.get(job.poolKey)!;
        target.wouldAdd.push(
          `${job.pod.metadata.name}=${conditionText(job.want.status, job.want.reason)}`,
        );
        if (job.actual) {
          target.wouldRemove.push(
            `${job.pod.metadata.name}=${conditionText(job.actual.status, job.actual.reason)}`,
          );
        }
      }
      const now = sink.nowIso();
      for (const [poolKey, target] of targets) {
        target.wouldAdd.sort(byString);
        target.wouldRemove.sort(byString);
        sink.observed.report(poolKey, target.pool, target.wouldAdd, target.wouldRemove);
        target.lastAppliedAt = now;
      }
      this.#targets = targets;
      return;
    }
    // Pods gone from the cache (or no longer gated) are forgotten with their bookkeeping.
    for (const key of [...this.#sent.keys()]) if (!seen.has(key)) this.#sent.delete(key);
    for (const key of [...this.#podErrors.keys()]) {
      if (!seen.has(key)) {
        this.#podErrors.delete(key);
        sink.backoff.succeeded(key);
      }
    }
    this.#targets = targets;

    const failedByPool = new Map<string, string[]>();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < jobs.length) {
        if (signal.aborted) return;
        const job = jobs[next]!;
        next += 1;
        try {
          await this.#write(job, signal);
        } catch (error) {
          if (signal.aborted) return;
          const message = describeThrown(error);
          sink.backoff.failed(job.key);
          this.#podErrors.set(job.key, message);
          const failed = failedByPool.get(job.poolKey) ?? [];
          failed.push(job.key);
          failedByPool.set(job.poolKey, failed);
          sink.logger.warn(
            { sink: this.kind, target: job.poolKey, pod: job.key, error: message },
            'readiness gate: writing the condition failed',
          );
          sink.publish(sink.failure(job.poolKey, job.pool, `${job.key}: ${message}`));
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(this.#concurrency, jobs.length) }, () => worker()),
    );
    if (signal.aborted) throw abortReason(signal);

    const now = sink.nowIso();
    for (const [poolKey, target] of targets) {
      const failed = failedByPool.get(poolKey) ?? [];
      const held = heldPods.get(poolKey) ?? [];
      if (failed.length === 0 && held.length === 0) {
        target.lastAppliedAt = now;
        target.lastError = null;
        continue;
      }
      const named = failed
        .slice(0, MAX_NAMED_FAILED_PODS)
        .map((key) => `${key}: ${this.#podErrors.get(key) ?? 'failed'}`);
      const more = failed.length - named.length;
      const parts = [
        ...named,
        ...(more > 0 ? [`and ${more} more pod(s) failed`] : []),
        ...(held.length > 0
          ? [heldError(sink.isoAt(this.#earliestHeld(poolKey, held)), `${held.length} pod(s) held`)]
          : []),
      ];
      target.lastError = parts.join('; ');
      failures.push(sink.failure(poolKey, target.pool, target.lastError));
    }
    if (failures.length > 0) throw new SinkApplyError(failures);
  }

  status(): SinkTargetStatus[] {
    return [...this.#targets.entries()]
      .sort(([a], [b]) => byString(a, b))
      .map(([key, target]) => {
        const until = this.#poolHeldUntil(target);
        return this.#sink.status(key, target, {
          pending: [],
          backoffUntil: until === undefined ? null : this.#sink.isoAt(until),
          // Conditions are never removed, so panic holds nothing here.
          panic: false,
          heldByPanic: [],
          // Server-side apply under its own field manager: it owns its one condition and nothing
          // else on the pod, so there is nothing of another writer it could remove.
          ownership: { mode: 'managed', by: 'field-manager' },
        });
      });
  }

  nextAttemptAtMs(): number | undefined {
    return this.#sink.backoff.nextAttemptAtMs();
  }

  async #write(job: Job, signal: AbortSignal): Promise<void> {
    const { pod, want, actual } = job;
    // The transition time moves only when the status does, as the kubelet keeps it.
    const lastTransitionTime =
      actual?.status === want.status && actual.lastTransitionTime
        ? actual.lastTransitionTime
        : this.#sink.nowIso().replace(/\.\d+Z$/, 'Z');
    const target = job.poolKey;
    let stored: { resourceVersion: string | undefined };
    try {
      stored = await this.#sink.call(target, 'apply', () =>
        this.#options.api.apply(
          { namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
          { type: this.#options.conditionType, ...want, lastTransitionTime },
          signal,
        ),
      );
    } catch (error) {
      this.#options.onWrite?.({ status: want.status, result: 'error' });
      throw error;
    }
    this.#options.onWrite?.({ status: want.status, result: 'success' });
    this.#sink.backoff.succeeded(job.key);
    this.#podErrors.delete(job.key);
    this.#sent.set(job.key, {
      uid: pod.metadata.uid,
      resourceVersionBefore: pod.metadata.resourceVersion,
      condition: want,
    });
    const added = `${pod.metadata.name}=${conditionText(want.status, want.reason)}`;
    const removed = actual
      ? [`${pod.metadata.name}=${conditionText(actual.status, actual.reason)}`]
      : [];
    this.#sink.logger.info(
      {
        sink: this.kind,
        target,
        pod: job.key,
        status: want.status,
        reason: want.reason,
        resourceVersion: stored.resourceVersion,
      },
      'readiness gate: condition written',
    );
    this.#sink.publish({
      type: 'sink.applied',
      kind: this.kind,
      target,
      pool: job.pool,
      added: [added],
      removed,
    });
  }

  /** The earliest clock time a held pod of this pool may be written again. */
  #earliestHeld(poolKey: string, names: string[]): number {
    const [namespace] = poolKey.split('/');
    let earliest = Number.POSITIVE_INFINITY;
    for (const name of names) {
      const until = this.#sink.backoff.heldUntil(`${namespace}/${name}`);
      if (until !== undefined && until < earliest) earliest = until;
    }
    return Number.isFinite(earliest) ? earliest : this.#sink.clock.now();
  }

  /** The earliest time a held pod of the pool may be written; `undefined` when none is held. */
  #poolHeldUntil(target: PoolTarget): number | undefined {
    let earliest: number | undefined;
    for (const entry of target.desired) {
      const name = entry.slice(0, entry.indexOf('='));
      const until = this.#sink.backoff.heldUntil(`${target.namespace}/${name}`);
      if (until !== undefined && (earliest === undefined || until < earliest)) earliest = until;
    }
    return earliest;
  }
}
