/**
 * Which pools are in panic, as the leader deploys them, and the report of each entry and exit:
 * one `pool.panic` event and one log line per transition (a warning on entry, info on exit), and
 * the state `pool_controller_sink_panic` and `GET /api/v1/sinks` read.
 *
 * The judgement itself is the render's (`renderRoutingState` marks a pool `panic`, purely from the
 * cells); this only remembers the last deployed one, so "once per entry and exit" holds however
 * many runs begin while the pool stays in panic. A pool that vanished leaves panic silently with
 * its last cell: there is nothing left to hold.
 */
import type { PoolCapacity, RoutingState } from '../pools/routing-state.js';
import type { Logger } from '../runtime/logger.js';
import type { PoolPanicEvent } from './service-events.js';

/** One pool in panic, for `GET /api/v1/sinks`. */
export interface PanicEntry extends Omit<PoolCapacity, 'panic'> {
  namespace: string;
  pool: string;
  /** RFC 3339 time the pool entered panic. */
  since: string;
}

/**
 * Where the tracker reports: `publish` receives each `pool.panic` event, `logger` the matching
 * line; the wall clock stamps each entry's `since`.
 */
interface PanicTrackerOptions {
  publish: (event: PoolPanicEvent) => void;
  logger: Logger;
  wallClock?: () => Date;
}

/**
 * The memory of which pools were in panic at the last deploy, so entry and exit are each reported
 * once. The routing controller feeds it each state it deploys (`observe`); the sinks status and the
 * gauge read it.
 */
export class PanicTracker {
  readonly #publish: (event: PoolPanicEvent) => void;
  readonly #logger: Logger;
  readonly #wallClock: () => Date;
  /** By `namespace/pool`: the pools in panic at the last deploy. Bounded by the pools. */
  readonly #inPanic = new Map<string, PanicEntry>();
  /** By `namespace/pool`: every pool of the last deploy, for the gauge's zero series. */
  #pools: Array<{ namespace: string; pool: string }> = [];

  constructor(options: PanicTrackerOptions) {
    this.#publish = options.publish;
    this.#logger = options.logger;
    this.#wallClock = options.wallClock ?? (() => new Date());
  }

  /** The state about to be deployed: reports every pool that entered or left panic since the last. */
  observe(state: RoutingState): void {
    const seen = new Set<string>();
    this.#pools = state.pools.map((p) => ({ namespace: p.namespace, pool: p.pool }));
    for (const pool of state.pools) {
      const key = `${pool.namespace}/${pool.pool}`;
      seen.add(key);
      const was = this.#inPanic.get(key);
      const capacity = pool.capacity;
      if (!capacity) continue;
      const now = {
        routable: capacity.routable,
        known: capacity.known,
        thresholdPercent: capacity.thresholdPercent,
      };
      if (capacity.panic) {
        const entry: PanicEntry = {
          namespace: pool.namespace,
          pool: pool.pool,
          ...now,
          since: was?.since ?? this.#wallClock().toISOString(),
        };
        this.#inPanic.set(key, entry);
        if (!was) this.#report(entry, true);
      } else if (was) {
        this.#inPanic.delete(key);
        this.#report({ ...was, ...now }, false);
      }
    }
    for (const key of [...this.#inPanic.keys()]) {
      if (!seen.has(key)) this.#inPanic.delete(key);
    }
  }

  /** The pools in panic, sorted by namespace then pool. */
  entries(): PanicEntry[] {
    return [...this.#inPanic.values()]
      .map((e) => ({ ...e }))
      .sort((a, b) =>
        a.namespace === b.namespace
          ? a.pool.localeCompare(b.pool)
          : a.namespace.localeCompare(b.namespace),
      );
  }

  /** Every pool of the last deploy, with whether it is in panic: for the gauge. */
  pools(): Array<{ namespace: string; pool: string; inPanic: boolean }> {
    return this.#pools.map((p) => ({
      ...p,
      inPanic: this.#inPanic.has(`${p.namespace}/${p.pool}`),
    }));
  }

  #report(entry: PanicEntry, inPanic: boolean): void {
    const fields = {
      namespace: entry.namespace,
      pool: entry.pool,
      routable: entry.routable,
      known: entry.known,
      thresholdPercent: entry.thresholdPercent,
    };
    if (inPanic) {
      this.#logger.warn(
        fields,
        'pool entered panic: fewer of its cells are alive and routable than --sink-panic-threshold; its sinks keep every endpoint they list until it recovers',
      );
    } else {
      this.#logger.info(fields, 'pool left panic: its sinks remove dead endpoints again');
    }
    this.#publish({ type: 'pool.panic', inPanic, ...fields });
  }
}
