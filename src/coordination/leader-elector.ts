/**
 * Leader election over a Lease: at most one process of a group acts, and another takes over
 * within about one lease duration when it dies, or within about one retry period when it quits.
 *
 * Port of client-go's `tools/leaderelection`: optimistic concurrency on one Lease, expiry judged
 * from the local time a change was *observed* (never from the timestamps other machines wrote),
 * a renew deadline shorter than the lease so a leader that cannot renew stops acting before a
 * follower may take over, and a release on cancel. One `run` is one term:
 *
 *   run ──► acquiring ──attempt succeeds──► leading ──renew deadline / signal──► stopped ──► (release) ──► resolved
 *              └───────────── signal aborts ───────────────────────────────────────────────────────────► resolved
 *
 * Size: one port of client-go's leader election: acquire, renew, release and the observed-time
 * rules share one state.
 */

import { jitteredMs } from '../runtime/backoff.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { positiveDurationMs } from '../runtime/positive-duration.js';
import {
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type ObservedLease,
  sameObservedLease,
} from './lease-record.js';
import { formatMicroTime } from './micro-time.js';

/** client-go's default: how long followers wait after the last observed change before taking over. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;
/** client-go's default: a leader that has not renewed for this long stops acting, well before expiry. */
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
/** client-go's default: the pace of acquire and renew attempts. */
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/**
 * client-go's `JitterFactor`: acquire waits `retryPeriod × (1 + random × 1.2)` so that replicas
 * started together do not hammer the API server in lockstep. Also the margin the renew deadline
 * must keep over the retry period, so at least one renewal can fit in before the deadline.
 */
export const LEADER_ELECTION_JITTER_FACTOR = 1.2;
/** client-go's healthz adaptor default: slack past the lease before a wedged leader is unhealthy. */
export const DEFAULT_HEALTH_TOLERANCE_MS = 20_000;

/**
 * What an elector is built from. The three durations default to client-go's and are checked as
 * client-go checks them: lease > renew deadline > 1.2 × retry period, so a leader always has time
 * to renew before it must stop and a follower never takes over from a leader still inside its
 * deadline. Durations are in ms on `clock`.
 */
export interface LeaderElectorOptions {
  lock: LeaseLock;
  /** Non-empty and unique per process: two processes with one identity would both lead. */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Release the lease when `run`'s signal aborts, so a follower need not wait out the lease. */
  releaseOnCancel?: boolean;
  /** All waiting and every expiry judgement. */
  clock?: Clock;
  /** Only for the timestamps written into the record (they are informational). */
  wallClock?: () => Date;
  /** In [0, 1), for the acquire jitter. */
  random?: () => number;
  logger?: Logger;
  /** Called when this elector starts leading; `signal` aborts when this term's leadership ends. */
  onStartedLeading?: (signal: AbortSignal) => void | Promise<void>;
  /** Called exactly once when a term that led stops leading. */
  onStoppedLeading?: () => void;
  /** Called once per change of the observed holder to a non-empty identity (this one included). */
  onNewLeader?: (identity: string) => void;
}

/** Why a leading term ended; the `leading` signal's abort reason. */
export class LeadershipLostError extends Error {
  override readonly name = 'LeadershipLostError';
}

function positiveFinite(name: string, value: unknown, fallback: number): number {
  return positiveDurationMs('LeaderElector', name, value, fallback);
}

/** Settled value of an attempt: the clock time its write returned, or null when it failed. */
type AttemptResult = number | null;

/**
 * One process's side of a leader election. `run(signal)` is one term and may be called again after
 * it resolves (the service loops it for as long as it runs), so a process that lost the lease
 * competes again without being rebuilt. `isLeader()`, `leader()` and `healthy()` are cheap reads
 * for the control plane and the liveness probe.
 */
export class LeaderElector {
  readonly #lock: LeaseLock;
  readonly #identity: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #releaseOnCancel: boolean;
  readonly #clock: Clock;
  readonly #wallClock: () => Date;
  readonly #random: () => number;
  readonly #logger: Logger;
  readonly #onStartedLeading: ((signal: AbortSignal) => void | Promise<void>) | undefined;
  readonly #onStoppedLeading: (() => void) | undefined;
  readonly #onNewLeader: ((identity: string) => void) | undefined;

  /** The last Lease seen (read or written) and the local clock time it was first seen. */
  #observed: ObservedLease | null = null;
  #observedAtMs = 0;
  #isLeader = false;
  /** Clock time the last successful write returned. */
  #lastSuccessMs = 0;
  #running = false;
  /**
   * True from the moment a write is sent until it settles while its attempt is still wanted. An
   * abandoned renewal may already have been applied by the server, moving the Lease's
   * resourceVersion past the observed one; a release sent on the observed one would then be
   * refused and followers would wait out a whole lease. A release refused with a conflict while
   * this is set reads the Lease and releases once more on what it read.
   */
  #writeOutcomeUnknown = false;

  /** Validates every duration after defaults, as client-go's `NewLeaderElector` does. */
  constructor(options: LeaderElectorOptions) {
    if (!options?.lock || typeof options.lock.get !== 'function') {
      throw new TypeError('LeaderElector: lock must be a LeaseLock');
    }
    if (typeof options.identity !== 'string' || options.identity === '') {
      throw new RangeError('LeaderElector: identity must be a non-empty string');
    }
    const leaseDurationMs = positiveFinite(
      'leaseDurationMs',
      options.leaseDurationMs,
      DEFAULT_LEASE_DURATION_MS,
    );
    const renewDeadlineMs = positiveFinite(
      'renewDeadlineMs',
      options.renewDeadlineMs,
      DEFAULT_RENEW_DEADLINE_MS,
    );
    const retryPeriodMs = positiveFinite(
      'retryPeriodMs',
      options.retryPeriodMs,
      DEFAULT_RETRY_PERIOD_MS,
    );
    if (!(leaseDurationMs > renewDeadlineMs)) {
      throw new RangeError(
        `LeaderElector: leaseDurationMs (${leaseDurationMs}) must be greater than renewDeadlineMs (${renewDeadlineMs})`,
      );
    }
    if (!(renewDeadlineMs > LEADER_ELECTION_JITTER_FACTOR * retryPeriodMs)) {
      throw new RangeError(
        `LeaderElector: renewDeadlineMs (${renewDeadlineMs}) must be greater than ${LEADER_ELECTION_JITTER_FACTOR} × retryPeriodMs (${retryPeriodMs})`,
      );
    }
    this.#lock = options.lock;
    this.#identity = options.identity;
    this.#leaseDurationMs = leaseDurationMs;
    this.#renewDeadlineMs = renewDeadlineMs;
    this.#retryPeriodMs = retryPeriodMs;
    this.#releaseOnCancel = options.releaseOnCancel ?? true;
    this.#clock = options.clock ?? realClock;
    this.#wallClock = options.wallClock ?? (() => new Date());
    this.#random = options.random ?? Math.random;
    this.#logger = options.logger ?? silentLogger;
    this.#onStartedLeading = options.onStartedLeading;
    this.#onStoppedLeading = options.onStoppedLeading;
    this.#onNewLeader = options.onNewLeader;
  }

  /** Whether this elector currently leads (between acquiring and losing). */
  isLeader(): boolean {
    return this.#isLeader;
  }

  /** The observed holder; `null` when there is none or the lease was released. */
  leader(): string | null {
    const holder = this.#observed?.record.holderIdentity ?? '';
    return holder === '' ? null : holder;
  }

  /**
   * False exactly while this elector believes it leads but its last successful renewal is older
   * than `leaseDurationMs + toleranceMs`: a wedged renew loop must fail the liveness probe.
   */
  healthy(toleranceMs: number = DEFAULT_HEALTH_TOLERANCE_MS): boolean {
    if (!this.#isLeader) return true;
    return this.#clock.now() - this.#lastSuccessMs <= this.#leaseDurationMs + toleranceMs;
  }

  /**
   * One term: acquire, lead until the renew deadline passes or `signal` aborts, release (when
   * cancelled and `releaseOnCancel`). Never rejects, except when a term is already running.
   */
  run(signal: AbortSignal): Promise<void> {
    if (this.#running) {
      return Promise.reject(new Error('LeaderElector.run() called while a term is running'));
    }
    this.#running = true;
    return this.#term(signal)
      .catch((err: unknown) =>
        this.#logger.error({ err, ...this.#logFields() }, 'leader election term failed'),
      )
      .finally(() => {
        this.#running = false;
      });
  }

  async #term(signal: AbortSignal): Promise<void> {
    if (!(await this.#acquire(signal))) return;
    await this.#lead(signal);
  }

  /** Attempts at once, then after a jittered retry period counted from each attempt's end. */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    this.#logger.debug(this.#logFields(), 'attempting to acquire leader lease');
    for (;;) {
      if (signal.aborted) return false;
      const wroteAt = await this.#attemptWithin(signal);
      if (wroteAt !== null) {
        this.#lastSuccessMs = wroteAt;
        return true;
      }
      const waitMs = jitteredMs(this.#retryPeriodMs, LEADER_ELECTION_JITTER_FACTOR, this.#random);
      try {
        await this.#clock.sleep(waitMs, signal);
      } catch {
        return false;
      }
    }
  }

  async #lead(signal: AbortSignal): Promise<void> {
    this.#isLeader = true;
    const leading = new AbortController();
    this.#logger.info(this.#logFields(), 'acquired leader lease');
    this.#callStartedLeading(leading.signal);

    let lostReason = 'cancelled';
    for (;;) {
      const renewed = await this.#renewBeforeDeadline(signal);
      if (renewed === null) {
        if (!signal.aborted) lostReason = 'renew deadline passed';
        break;
      }
      this.#lastSuccessMs = renewed;
    }

    // The order callers rely on: nobody sees isLeader() true once `leading` has aborted.
    this.#isLeader = false;
    leading.abort(new LeadershipLostError(`leadership lost: ${lostReason}`));
    this.#logger.info({ ...this.#logFields(), reason: lostReason }, 'stopped leading');
    this.#callStoppedLeading();
    if (signal.aborted && this.#releaseOnCancel) await this.#release();
  }

  /**
   * Renews every retry period after the last success until one attempt succeeds (its write's
   * clock time) or the deadline `last success + renewDeadlineMs` passes or `signal` aborts
   * (null). The deadline does not wait for an in-flight attempt: it aborts it and drops its result.
   */
  async #renewBeforeDeadline(signal: AbortSignal): Promise<AttemptResult> {
    const scope = new AbortController();
    const onAbort = (): void => scope.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) scope.abort(signal.reason);
    const deadlineMs = this.#lastSuccessMs + this.#renewDeadlineMs;
    this.#clock.sleep(deadlineMs - this.#clock.now(), scope.signal).then(
      () => scope.abort(new LeadershipLostError('renew deadline passed')),
      () => {}, // the scope ended first
    );
    try {
      for (;;) {
        try {
          await this.#clock.sleep(this.#retryPeriodMs, scope.signal);
        } catch {
          return null;
        }
        const wroteAt = await this.#attemptWithin(scope.signal);
        if (wroteAt !== null) return wroteAt;
        if (scope.signal.aborted) return null;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      scope.abort(); // stops the deadline sleeper
    }
  }

  /** One attempt that settles as failed the moment `scope` aborts, whatever the lock still does. */
  #attemptWithin(scope: AbortSignal): Promise<AttemptResult> {
    if (scope.aborted) return Promise.resolve(null);
    return new Promise<AttemptResult>((resolve) => {
      const onAbort = (): void => resolve(null);
      scope.addEventListener('abort', onAbort, { once: true });
      void this.#tryAcquireOrRenew(scope).then((wroteAt) => {
        scope.removeEventListener('abort', onAbort);
        resolve(scope.aborted ? null : wroteAt);
      });
    });
  }

  /**
   * client-go's `tryAcquireOrRenew`. Never rejects: a failure (a conflict included) is logged and
   * reported as null, and once `signal` has aborted nothing it learns is recorded.
   */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<AttemptResult> {
    const now = this.#clock.now();
    let current: ObservedLease | null;
    try {
      current = await this.#lock.get(signal);
    } catch (err) {
      this.#attemptFailed('get', err, signal);
      return null;
    }
    if (signal.aborted) return null;

    if (current === null) {
      const stamp = formatMicroTime(this.#wallClock());
      const record: LeaseRecord = {
        holderIdentity: this.#identity,
        leaseDurationSeconds: this.#leaseDurationSeconds(),
        acquireTime: stamp,
        renewTime: stamp,
        leaseTransitions: 0,
      };
      return this.#write('create', () => this.#lock.create(record, signal), now, signal);
    }

    this.#observe(current, this.#clock.now(), false);
    const holder = current.record.holderIdentity;
    if (
      holder !== '' &&
      holder !== this.#identity &&
      this.#observedAtMs + current.record.leaseDurationSeconds * 1000 > now
    ) {
      this.#logger.debug(
        { ...this.#logFields(), holder },
        'lease is held by another and not expired',
      );
      return null;
    }

    const stamp = formatMicroTime(this.#wallClock());
    const renewing = holder === this.#identity;
    const record: LeaseRecord = {
      holderIdentity: this.#identity,
      leaseDurationSeconds: this.#leaseDurationSeconds(),
      acquireTime: renewing ? current.record.acquireTime : stamp,
      renewTime: stamp,
      leaseTransitions: renewing
        ? current.record.leaseTransitions
        : current.record.leaseTransitions + 1,
    };
    const resourceVersion = current.resourceVersion;
    return this.#write(
      'update',
      () => this.#lock.update(record, resourceVersion, signal),
      now,
      signal,
    );
  }

  async #write(
    operation: 'create' | 'update',
    write: () => Promise<ObservedLease>,
    now: number,
    signal: AbortSignal,
  ): Promise<AttemptResult> {
    let written: ObservedLease;
    this.#writeOutcomeUnknown = true;
    try {
      written = await write();
    } catch (err) {
      // A refusal is known not to have changed the Lease; anything else may have.
      if (!signal.aborted && err instanceof LeaseConflictError) this.#writeOutcomeUnknown = false;
      this.#attemptFailed(operation, err, signal);
      return null;
    }
    if (signal.aborted) return null;
    this.#writeOutcomeUnknown = false;
    this.#observe(written, now, true);
    return this.#clock.now();
  }

  /**
   * Remembers a Lease and when it was observed. A read that equals what was already observed
   * keeps the earlier observed time (that is what lets a dead holder's lease expire); a write is
   * always taken. Reports a change of holder to a non-empty identity.
   */
  #observe(lease: ObservedLease, atMs: number, force: boolean): void {
    if (!force && sameObservedLease(this.#observed, lease)) return;
    const previousHolder = this.#observed?.record.holderIdentity ?? '';
    this.#observed = lease;
    this.#observedAtMs = atMs;
    const holder = lease.record.holderIdentity;
    if (holder !== previousHolder && holder !== '') {
      this.#logger.info({ ...this.#logFields(), holder }, 'new leader observed');
      try {
        this.#onNewLeader?.(holder);
      } catch (err) {
        this.#logger.error({ err, ...this.#logFields() }, 'onNewLeader threw');
      }
    }
  }

  /**
   * Best effort: hands the lease back with a one-second duration so a follower can take over
   * within about one retry period. Abandoned (its signal aborted) after one retry period. The
   * update goes on the observed resourceVersion, as client-go's does. Only when it is refused with
   * a conflict while the last write's outcome was unknown (a renewal abandoned on the wire, which
   * the server may have applied after all) does it read the Lease and, if the Lease still names
   * this identity, send the release once more on the resourceVersion read, within the same budget.
   */
  async #release(): Promise<void> {
    const observed = this.#observed;
    if (!observed || observed.record.holderIdentity !== this.#identity) return;
    const mayHaveMoved = this.#writeOutcomeUnknown;
    const request = new AbortController();
    const timer = new AbortController();
    type Outcome =
      | { kind: 'released'; lease: ObservedLease }
      | { kind: 'not-held'; lease: ObservedLease | null }
      | { kind: 'failed'; err: unknown }
      | { kind: 'abandoned' };
    const releaseOn = (base: ObservedLease): Promise<ObservedLease> => {
      const stamp = formatMicroTime(this.#wallClock());
      const record: LeaseRecord = {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: stamp,
        renewTime: stamp,
        leaseTransitions: base.record.leaseTransitions,
      };
      return this.#lock.update(record, base.resourceVersion, request.signal);
    };
    const release = async (): Promise<Outcome> => {
      try {
        return { kind: 'released', lease: await releaseOn(observed) };
      } catch (err) {
        if (!mayHaveMoved || !(err instanceof LeaseConflictError)) throw err;
      }
      const current = await this.#lock.get(request.signal);
      if (current === null || current.record.holderIdentity !== this.#identity) {
        return { kind: 'not-held', lease: current };
      }
      return { kind: 'released', lease: await releaseOn(current) };
    };
    const attempt: Promise<Outcome> = release().catch((err: unknown) => ({ kind: 'failed', err }));
    const deadline: Promise<Outcome> = this.#clock
      .sleep(this.#retryPeriodMs, timer.signal)
      .then(() => ({ kind: 'abandoned' }));
    deadline.catch(() => {}); // cancelled once the release settled
    const outcome = await Promise.race([attempt, deadline]);
    timer.abort();
    if (outcome.kind === 'released') {
      this.#writeOutcomeUnknown = false;
      this.#observe(outcome.lease, this.#clock.now(), true);
      this.#logger.info(this.#logFields(), 'released leader lease');
    } else if (outcome.kind === 'not-held') {
      if (outcome.lease) this.#observe(outcome.lease, this.#clock.now(), false);
      else this.#observed = null; // deleted: nobody holds it
      this.#logger.info(this.#logFields(), 'lease no longer held; nothing to release');
    } else if (outcome.kind === 'failed') {
      this.#logger.warn(
        { err: outcome.err, ...this.#logFields() },
        'failed to release leader lease',
      );
    } else {
      request.abort(new Error('lease release abandoned after retryPeriodMs'));
      this.#logger.warn(
        this.#logFields(),
        'lease release did not settle within retryPeriodMs; abandoned',
      );
    }
  }

  #attemptFailed(operation: string, err: unknown, signal: AbortSignal): void {
    if (signal.aborted) return; // abandoned: its failure is the abort, not news
    this.#logger.warn({ err, operation, ...this.#logFields() }, 'leader lease attempt failed');
  }

  #callStartedLeading(signal: AbortSignal): void {
    const onError = (err: unknown): void =>
      this.#logger.error({ err, ...this.#logFields() }, 'onStartedLeading failed');
    try {
      const result = this.#onStartedLeading?.(signal);
      if (result && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, onError);
      }
    } catch (err) {
      onError(err);
    }
  }

  #callStoppedLeading(): void {
    try {
      this.#onStoppedLeading?.();
    } catch (err) {
      this.#logger.error({ err, ...this.#logFields() }, 'onStoppedLeading threw');
    }
  }

  /** Whole seconds, rounded up, so the lease is never shorter than configured. */
  #leaseDurationSeconds(): number {
    return Math.ceil(this.#leaseDurationMs / 1000);
  }

  #logFields(): { lease: string; identity: string } {
    return { lease: this.#lock.describe(), identity: this.#identity };
  }
}
