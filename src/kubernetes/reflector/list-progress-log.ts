/**
 * The info line a long whole read (a LIST, a watch-list's initial events) logs as it goes: the
 * pages and pods read so far, at most once per `LIST_PROGRESS_LOG_INTERVAL_MS`, so an operator
 * watching a 100,000-pod LIST sees it move without a line per page. Fed what was heard and when,
 * like ./backoff.ts, so the state machine in ./reflector.ts only reports.
 */
import type { Logger } from '../../runtime/logger.js';

/** A long LIST logs its progress (pages, pods) at most this often, at info level. */
export const LIST_PROGRESS_LOG_INTERVAL_MS = 2_000;

/** One whole read's progress lines. */
export class ListProgressLog {
  readonly #logger: Logger;
  readonly #message: string;
  readonly #startedAt: number;
  #loggedAt: number;

  /** `message`: the line's text (which read this is); `startedAt`: when it began (clock ms). */
  constructor(logger: Logger, message: string, startedAt: number) {
    this.#logger = logger;
    this.#message = message;
    this.#startedAt = startedAt;
    this.#loggedAt = startedAt;
  }

  /** `pages` and `pods` read so far, at `now`: logged when the interval since the last line ran out. */
  heard(pages: number, pods: number, now: number): void {
    if (now - this.#loggedAt < LIST_PROGRESS_LOG_INTERVAL_MS) return;
    this.#loggedAt = now;
    this.#logger.info({ pages, pods, elapsedMs: Math.round(now - this.#startedAt) }, this.#message);
  }
}
