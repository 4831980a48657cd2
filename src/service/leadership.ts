/**
 * Who acts: the replica holding the Lease (leader election on), or this process alone (no Lease:
 * the simulated source, or `--leader-elect=false`). Both shapes give the service the same hooks
 * and the same view, so everything above them is identical with and without a Lease.
 *
 * A replica that loses the Lease stops acting at once (its term's signal aborts) and campaigns
 * again; it never exits for it, because its reflector, store and read API are warm and correct.
 */

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { LeaderElector } from '../coordination/leader-elector.js';
import type { LeaseLock } from '../coordination/lease-record.js';
import type { Clock } from '../runtime/clock.js';
import { abortReason } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';

/** What `GET /api/v1/leader` serves. */
export interface LeadershipView {
  /** This replica's identity in the Lease. */
  identity: string;
  leading: boolean;
  /** The observed holder, `null` when none (or no Lease and not leading). */
  leader: string | null;
  /** `namespace/name` of the Lease, `null` when there is none. */
  lease: string | null;
  /** RFC 3339: when this replica began leading; `null` while it does not lead. */
  since: string | null;
}

/**
 * What the service does when leadership changes. Called synchronously; must not throw. `identity`
 * is this replica's, so the hooks can be built before the leadership that calls them.
 */
export interface LeadershipHooks {
  /** This replica (`identity`) leads until `term` aborts. */
  onStartedLeading(term: AbortSignal, identity: string): void;
  onStoppedLeading(identity: string): void;
  onNewLeader(identity: string): void;
}

/**
 * Who acts, as the service drives it: `run` for the life of the service, `view()` for `GET
 * /api/v1/leader`, `healthy()` for `/healthz`. `LeaseLeadership` and `SoleLeadership` implement it,
 * so the service never checks whether a Lease exists.
 */
export interface Leadership {
  readonly identity: string;
  view(): LeadershipView;
  /** For `/healthz`: false when a renew loop is wedged (client-go's healthz adaptor). */
  healthy(): boolean;
  /** Campaigns (and leads, when elected) until `signal` aborts; then releases and resolves. */
  run(signal: AbortSignal): Promise<void>;
}

/**
 * `$POD_NAME` (the downward API) or the hostname, plus `_` and a random suffix: unique even when
 * a restarted pod keeps its name, so a new process never mistakes the old one's Lease for its own.
 */
export function leaderIdentity(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.POD_NAME?.trim() || hostname() || 'pool-controller';
  return `${base}_${randomBytes(5).toString('hex')}`;
}

/**
 * A Lease leadership's settings: the lock, this replica's identity (`leaderIdentity()`) and the
 * three elector durations (checked by the elector), plus the hooks the service acts on.
 */
interface LeaseLeadershipOptions {
  lock: LeaseLock;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  hooks: LeadershipHooks;
  clock?: Clock;
  wallClock?: () => Date;
  logger?: Logger;
}

/** Leadership through a Lease: client-go's leader election, campaigning again after every term. */
export class LeaseLeadership implements Leadership {
  readonly identity: string;
  readonly #elector: LeaderElector;
  readonly #lease: string;
  readonly #wallClock: () => Date;
  readonly #logger: Logger;
  #since: string | null = null;

  constructor(options: LeaseLeadershipOptions) {
    this.identity = options.identity;
    this.#lease = options.lock.describe();
    this.#wallClock = options.wallClock ?? (() => new Date());
    this.#logger = options.logger ?? silentLogger;
    const { hooks } = options;
    this.#elector = new LeaderElector({
      lock: options.lock,
      identity: options.identity,
      leaseDurationMs: options.leaseDurationMs,
      renewDeadlineMs: options.renewDeadlineMs,
      retryPeriodMs: options.retryPeriodMs,
      releaseOnCancel: true,
      ...(options.clock ? { clock: options.clock } : {}),
      wallClock: this.#wallClock,
      logger: this.#logger,
      onStartedLeading: (term) => {
        this.#since = this.#wallClock().toISOString();
        this.#logger.info({ identity: this.identity, lease: this.#lease }, 'leading');
        hooks.onStartedLeading(term, this.identity);
      },
      onStoppedLeading: () => {
        this.#since = null;
        this.#logger.warn(
          { identity: this.identity, lease: this.#lease },
          'stopped leading; side effects stopped, campaigning again',
        );
        hooks.onStoppedLeading(this.identity);
      },
      onNewLeader: (identity) => {
        this.#logger.info({ leader: identity, lease: this.#lease }, 'new leader observed');
        hooks.onNewLeader(identity);
      },
    });
  }

  view(): LeadershipView {
    return {
      identity: this.identity,
      leading: this.#elector.isLeader(),
      leader: this.#elector.leader(),
      lease: this.#lease,
      since: this.#elector.isLeader() ? this.#since : null,
    };
  }

  healthy(): boolean {
    return this.#elector.healthy();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#logger.info({ identity: this.identity, lease: this.#lease }, 'campaigning for the Lease');
    // One term per `run`: a term ends when the renew deadline passes without a renewal; the
    // replica then campaigns again at once, until the service stops.
    while (!signal.aborted) await this.#elector.run(signal);
  }
}

/**
 * A sole leadership's settings: the identity it shows as leader and the reason there is no Lease,
 * which it logs once, so a single replica without election says so.
 */
interface SoleLeadershipOptions {
  identity: string;
  /** Why there is no Lease, for the log line that says so. */
  reason: string;
  hooks: LeadershipHooks;
  wallClock?: () => Date;
  logger?: Logger;
}

/** No Lease: this process leads from `run` until it stops, and says so. */
export class SoleLeadership implements Leadership {
  readonly identity: string;
  readonly #options: SoleLeadershipOptions;
  #since: string | null = null;

  constructor(options: SoleLeadershipOptions) {
    this.identity = options.identity;
    this.#options = options;
  }

  view(): LeadershipView {
    return {
      identity: this.identity,
      leading: this.#since !== null,
      leader: this.#since !== null ? this.identity : null,
      lease: null,
      since: this.#since,
    };
  }

  healthy(): boolean {
    return true;
  }

  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const { hooks, logger = silentLogger, wallClock = () => new Date() } = this.#options;
    logger.info(
      { identity: this.identity, reason: this.#options.reason },
      'no leader election: this process leads alone',
    );
    const term = new AbortController();
    this.#since = wallClock().toISOString();
    hooks.onNewLeader(this.identity);
    hooks.onStartedLeading(term.signal, this.identity);
    await new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.#since = null;
    term.abort(abortReason(signal));
    hooks.onStoppedLeading(this.identity);
  }
}
