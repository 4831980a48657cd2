/**
 * The adds a router took but never listed, per worker URL: a router that lies about an add is
 * reported and backed off, not re-posted on every run.
 *
 * The SGLang router sink follows an add by the worker id the router gave (`GET /workers/{id}`)
 * and re-posts it once the router says it no longer knows it. A router that answers 409 ("already
 * there") without an id and never lists the URL, or takes the add without an id and never lists
 * it, gives the sink nothing to follow: before this, every run (one a second while an add was
 * pending) posted it again, and each post was reported as a success. Here such an add is refused:
 * the URL is not posted again before its own backoff ends (1 s doubling, as `TargetBackoff`), and
 * `/api/v1/sinks` shows it as a pending add with the reason and the retry time. An honest "not
 * known" (404 for an id the router had accepted, or its add job failed: a restart, an engine
 * that never came up) is re-posted at once the first time, and refused from the second in a row.
 * A URL's streak ends once the router lists it, or once it is no longer desired.
 */
import type { Clock } from '../runtime/clock.js';
import { TargetBackoff, type TargetBackoffOptions } from './target-backoff.js';

/** One refused add as the sink shows it: since when, why, and the clock time it may be sent. */
interface RefusedAdd {
  since: string;
  reason: string;
  retryAtMs: number;
}

/**
 * One router target's refused adds. Bounded by the target's desired URLs: the sink calls
 * `keepOnly` with them on every run.
 */
export class RouterAddRefusals {
  readonly #backoff: TargetBackoff<string>;
  readonly #clock: Clock;
  /** By URL: refused and not posted since. */
  readonly #refused = new Map<string, { since: string; reason: string }>();
  /** By URL: honest forgets in a row (404 or a failed job), before a refusal. */
  readonly #forgotten = new Map<string, number>();
  /** Every URL with a streak (refused, forgotten or held), so `keepOnly` reaches them all. */
  readonly #streaks = new Set<string>();

  constructor(options: TargetBackoffOptions & { clock: Clock }) {
    this.#backoff = new TargetBackoff(options);
    this.#clock = options.clock;
  }

  /** The clock time before which an add of `url` must not be sent; `undefined` when it may be. */
  heldUntil(url: string): number | undefined {
    return this.#backoff.heldUntil(url);
  }

  /** The router's answer for `url` cannot be believed: hold it, and show why. */
  refuse(url: string, reason: string, sinceIso: string): void {
    this.#forgotten.delete(url);
    this.#streaks.add(url);
    this.#backoff.failed(url);
    this.#refused.set(url, { since: sinceIso, reason });
  }

  /**
   * A pending add of `url` was forgotten on an honest answer; `true` when it is the second in a
   * row, which the caller refuses instead of posting again at once.
   */
  forgotten(url: string): boolean {
    const count = (this.#forgotten.get(url) ?? 0) + 1;
    this.#forgotten.set(url, count);
    this.#streaks.add(url);
    return count > 1 || this.#backoff.failures(url) > 0;
  }

  /** `url` was posted again: no longer shown as refused (its streak still counts). */
  sent(url: string): void {
    this.#refused.delete(url);
  }

  /** The router lists `url`, or it is no longer desired: its streak ends. */
  settled(url: string): void {
    this.#refused.delete(url);
    this.#forgotten.delete(url);
    this.#streaks.delete(url);
    this.#backoff.succeeded(url);
  }

  /** Forgets every URL not in `urls` (the desired ones). */
  keepOnly(urls: ReadonlySet<string>): void {
    for (const url of [...this.#streaks]) if (!urls.has(url)) this.settled(url);
  }

  /** The refused adds, by URL, sorted. */
  entries(): Array<[string, RefusedAdd]> {
    const now = this.#clock.now();
    return [...this.#refused]
      .map(([url, r]): [string, RefusedAdd] => [
        url,
        { ...r, retryAtMs: this.#backoff.heldUntil(url) ?? now },
      ])
      .sort(([a], [b]) => a.localeCompare(b));
  }

  /** The earliest clock time a held URL may be posted again; `undefined` when none is held. */
  nextAttemptAtMs(): number | undefined {
    return this.#backoff.nextAttemptAtMs();
  }
}
