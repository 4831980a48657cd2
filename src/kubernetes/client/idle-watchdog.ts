/**
 * Tears a request down when the server stops sending bytes.
 *
 * A TCP connection whose peer vanished (a node gone, a NAT entry expired) can look open for a long
 * time, and Node's HTTP/1.1 client has no ping like Go's HTTP/2 transport uses to notice. The API
 * server sends a bookmark about once a minute on an open watch, so a long silence means the
 * connection is dead, and the reflector resumes from its cursor rather than waiting forever.
 */
import { abortReason, type Clock } from '../../runtime/clock.js';

/** Why the watchdog aborted a request. */
class IdleTimeoutError extends Error {
  override readonly name = 'IdleTimeoutError';
  constructor(readonly idleMs: number) {
    super(`no bytes received for ${idleMs} ms`);
  }
}

/** The reason a request is aborted when its owner is done with it (not a failure). */
class RequestReleasedError extends Error {
  override readonly name = 'RequestReleasedError';
  constructor() {
    super('request released');
  }
}

/**
 * A per-request signal that aborts after `idleMs` without a byte: the owner calls `touch()` on
 * every chunk and `release()` when done, which aborts the signal with `RequestReleasedError` (so
 * anything still open closes) and unlinks it from the parent signal, so a long-lived parent does
 * not collect listeners. `timedOut` tells the watchdog's abort from the others, so the caller can
 * word the failure and choose the retry.
 */
export class IdleWatchdog {
  readonly #controller = new AbortController();
  readonly #clock: Clock;
  readonly #idleMs: number;
  readonly #loop: Promise<void>;
  readonly #unlink: () => void;
  #lastActivity: number;

  /**
   * Starts watching at once: the time to the response headers counts too, so a request that never
   * gets an answer is torn down like one that went quiet.
   */
  constructor(clock: Clock, idleMs: number, parent: AbortSignal) {
    this.#clock = clock;
    this.#idleMs = idleMs;
    this.#lastActivity = clock.now();
    const onParentAbort = (): void => this.#controller.abort(abortReason(parent));
    if (parent.aborted) onParentAbort();
    else parent.addEventListener('abort', onParentAbort, { once: true });
    this.#unlink = () => parent.removeEventListener('abort', onParentAbort);
    this.#loop = this.#run();
  }

  /** Aborted by the parent, by a timeout, or by `release()`: hand it to the request. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True when the watchdog, not the parent or the owner, ended the request. */
  get timedOut(): boolean {
    return this.#controller.signal.reason instanceof IdleTimeoutError;
  }

  /**
   * Tears the request down now for a deadline of the owner's own (a WATCH that sent bytes but no
   * whole frame, a watch-list whose initial events never ended): the signal aborts with `reason`,
   * which the owner reads back from `signal.reason` to word the failure. `timedOut` stays false.
   */
  expire(reason: Error): void {
    this.#controller.abort(reason);
  }

  /** The server sent something. */
  touch(): void {
    this.#lastActivity = this.#clock.now();
  }

  /** Ends the watch and aborts the signal (closing anything still open); waits for the timer to go. */
  async release(): Promise<void> {
    this.#controller.abort(new RequestReleasedError());
    this.#unlink();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const signal = this.#controller.signal;
    while (!signal.aborted) {
      const remaining = this.#lastActivity + this.#idleMs - this.#clock.now();
      if (remaining <= 0) {
        this.#controller.abort(new IdleTimeoutError(this.#idleMs));
        return;
      }
      try {
        await this.#clock.sleep(remaining, signal);
      } catch {
        return;
      }
    }
  }
}
