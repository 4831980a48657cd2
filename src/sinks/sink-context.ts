/**
 * What every sink is built from and keeps beside its own targets: its mode, its two clocks, the
 * per-target backoff, the observe-mode reporter, the logger, the bus and the operation counter.
 *
 * The sinks differ in what a target is (a router, a slice, a gated pool) and in how they read and
 * write it; they do not differ in how a target's backoff is built and shown, how a held or failed
 * target becomes a `sink.failed`, how a call is counted, or how a target's status is laid out.
 * Those are written here once, so the three cannot drift apart in what `/api/v1/sinks`, the bus
 * and the metrics say about them.
 */
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { ObservedDiff } from './observed-diff.js';
import {
  DEFAULT_SINK_MODE,
  heldError,
  type SinkEvent,
  type SinkFailure,
  type SinkKind,
  type SinkMode,
  type SinkTargetStatus,
} from './sink.js';
import { TargetBackoff } from './target-backoff.js';

/** One API or HTTP call to a target, as `pool_controller_sink_operations_total` counts it. */
export interface SinkCallRecord {
  sink: SinkKind;
  target: string;
  operation: string;
  result: 'success' | 'error';
}

/**
 * The options every sink takes, whatever its targets; each sink's own options add what reaches
 * its targets. `R` is that sink's operation record.
 */
export interface SinkBaseOptions<R extends SinkCallRecord> {
  /** Only for the RFC 3339 times in `status()` (and what the sink writes with a time in it). */
  wallClock?: () => Date;
  /** Measures each target's backoff (and whatever the sink times itself). */
  clock?: Clock;
  /** A target whose last call failed is not called again for this long, doubling; default 1 s. */
  backoffBaseMs?: number;
  /** The longest such wait; default 60 s (the service passes its drift interval when shorter). */
  backoffMaxMs?: number;
  logger?: Logger;
  /** `sink.applied`, `sink.failed` and, in observe mode, `sink.observed`: what the sink says. */
  publish?: (event: SinkEvent) => void;
  /** Every call to a target, for the operation counter. */
  onOperation?: (record: R) => void;
  /** `observe`: read only, report what would change; default `apply`. */
  mode?: SinkMode;
}

/**
 * The fields of a target's bookkeeping that `status()` shows as they are (copied); each sink's
 * target state extends it with what only that sink keeps.
 */
export interface SinkTargetRecord {
  pool: string;
  desired: string[];
  actual: string[];
  lastAppliedAt: string | null;
  lastError: string | null;
  /** Observe mode: what apply would add now (sorted). */
  wouldAdd: string[];
  /** Observe mode: what apply would remove now (sorted). */
  wouldRemove: string[];
}

/** A target whose pool's panic can keep endpoints it would remove (a router, a slice). */
export interface PanicTargetRecord extends SinkTargetRecord {
  panic: boolean;
  heldByPanic: string[];
}

/** A target's record before anything was desired, read or written. */
export function newTargetRecord(pool: string): SinkTargetRecord {
  return {
    pool,
    desired: [],
    actual: [],
    lastAppliedAt: null,
    lastError: null,
    wouldAdd: [],
    wouldRemove: [],
  };
}

/** A panic-aware target's record before anything was desired, read or written. */
export function newPanicTargetRecord(pool: string): PanicTargetRecord {
  return { ...newTargetRecord(pool), panic: false, heldByPanic: [] };
}

/** What a sink says of a target beyond its record: the parts each kind of sink decides. */
type SinkTargetExtras = Pick<
  SinkTargetStatus,
  'pending' | 'backoffUntil' | 'panic' | 'heldByPanic' | 'ownership'
> & { role?: SinkTargetStatus['role']; unmarked?: string[] };

/**
 * One sink's shared machinery (see the header), held by the sink and built from its options. It
 * keeps no targets: the sink owns those, and asks this for the parts every sink does alike.
 */
export class SinkContext<R extends SinkCallRecord> {
  readonly kind: R['sink'];
  readonly mode: SinkMode;
  readonly clock: Clock;
  readonly logger: Logger;
  /** By whatever key names a target in the sink (a router, a slice, a pod). */
  readonly backoff: TargetBackoff<string>;
  readonly observed: ObservedDiff;
  readonly #wallClock: () => Date;
  readonly #publish: ((event: SinkEvent) => void) | undefined;
  readonly #onOperation: ((record: R) => void) | undefined;

  constructor(kind: R['sink'], options: SinkBaseOptions<R>) {
    this.kind = kind;
    this.mode = options.mode ?? DEFAULT_SINK_MODE;
    this.clock = options.clock ?? realClock;
    this.#wallClock = options.wallClock ?? (() => new Date());
    this.logger = options.logger ?? silentLogger;
    this.#publish = options.publish;
    this.#onOperation = options.onOperation;
    this.backoff = new TargetBackoff({
      clock: this.clock,
      ...(options.backoffBaseMs !== undefined ? { baseMs: options.backoffBaseMs } : {}),
      ...(options.backoffMaxMs !== undefined ? { maxMs: options.backoffMaxMs } : {}),
    });
    this.observed = new ObservedDiff({ kind, logger: this.logger, publish: this.#publish });
  }

  /** The wall clock now. */
  wallNow(): Date {
    return this.#wallClock();
  }

  /** The wall clock now, as RFC 3339 (`lastAppliedAt`, a pending change's `since`). */
  nowIso(): string {
    return this.#wallClock().toISOString();
  }

  /** The wall-clock time of clock time `atMs`, for status and messages. */
  isoAt(atMs: number): string {
    return new Date(this.#wallClock().getTime() + (atMs - this.clock.now())).toISOString();
  }

  /** `backoffUntil` of the target `key`: when its backoff ends, `null` when it may be called now. */
  backoffUntil(key: string): string | null {
    const until = this.backoff.heldUntil(key);
    return until === undefined ? null : this.isoAt(until);
  }

  /** Says `event` on the bus, when the sink has one. */
  publish(event: SinkEvent): void {
    this.#publish?.(event);
  }

  /** A `sink.failed` of `target` in `pool` (not yet said anywhere: the caller decides). */
  failure(target: string, pool: string, error: string): SinkFailure {
    return { type: 'sink.failed', kind: this.kind, target, pool, error };
  }

  /**
   * The `sink.failed` of a target its backoff holds until clock time `untilMs`: the failure that
   * earned the wait was reported when it happened, so this one is only counted, never said.
   */
  heldFailure(
    target: string,
    pool: string,
    untilMs: number,
    lastError: string | null,
  ): SinkFailure {
    return this.failure(target, pool, heldError(this.isoAt(untilMs), lastError));
  }

  /** Runs one call to `target`, counting it as `operation` with its result. */
  async call<T>(target: string, operation: R['operation'], run: () => Promise<T>): Promise<T> {
    try {
      const result = await run();
      this.#onOperation?.(this.#record(target, operation, 'success'));
      return result;
    } catch (error) {
      this.#onOperation?.(this.#record(target, operation, 'error'));
      throw error;
    }
  }

  /** One target as `GET /api/v1/sinks` serves it: its record copied, the sink's extras beside. */
  status(target: string, record: SinkTargetRecord, extras: SinkTargetExtras): SinkTargetStatus {
    const { role, pending, backoffUntil, panic, heldByPanic, unmarked, ownership } = extras;
    return {
      kind: this.kind,
      target,
      pool: record.pool,
      ...(role ? { role } : {}),
      desired: [...record.desired],
      actual: [...record.actual],
      pending,
      lastAppliedAt: record.lastAppliedAt,
      lastError: record.lastError,
      backoffUntil,
      mode: this.mode,
      wouldAdd: [...record.wouldAdd],
      wouldRemove: [...record.wouldRemove],
      panic,
      heldByPanic: [...heldByPanic],
      ...(unmarked ? { unmarked: [...unmarked] } : {}),
      ownership,
    };
  }

  #record(target: string, operation: R['operation'], result: R['result']): R {
    // R is one sink's record: exactly these four fields, with its own kind and operations.
    return { sink: this.kind, target, operation, result } as R;
  }
}
