/**
 * One sink's applies, kept apart from every other sink's: a slow or dead target (a router that
 * never answers, an API server answering each write in seconds) holds back only its own changes.
 *
 * The routing controller's deploy hands every sink the newest desired state through its worker and
 * waits for them only a bounded time (see `RoutingController`); an apply still in flight then keeps
 * running on its own, under its own deadline, and the newest state handed meanwhile is applied
 * right after it (only the newest waits: client-go's work queue, where a key added while it is
 * being processed is processed once more afterwards). A sink is thus still never called
 * concurrently, and each apply is level-triggered, so skipping the states in between loses nothing.
 */
import type { RoutingState } from '../pools/routing-state.js';
import type { Clock } from '../runtime/clock.js';
import type { Sink } from './sink.js';

/**
 * The longest one apply of one sink may take before its signal aborts: six of the router client's
 * 5 s requests. Beyond it a target is not slow but stuck, and the newest state waiting behind it
 * (or the next run) starts afresh; the other sinks never wait for it anyway.
 */
export const DEFAULT_SINK_APPLY_DEADLINE_MS = 30_000;

/** The abort reason of an apply that outlived its deadline. */
export class SinkApplyDeadlineError extends Error {
  override readonly name = 'SinkApplyDeadlineError';
}

/** How one apply ended: `aborted` only when `stop()` ended it (a deadline is a `failed`). */
export type SinkApplyOutcome =
  | { result: 'applied' }
  | { result: 'failed'; error: unknown }
  | { result: 'aborted' };

/**
 * What a worker is built from: its sink, the clock its deadline runs on, and who hears how each
 * apply ended (the routing controller: it looks again when an apply it no longer waits for ends).
 */
interface SinkWorkerOptions {
  sink: Sink;
  clock: Clock;
  deadlineMs?: number;
  onSettled?: (outcome: SinkApplyOutcome, worker: SinkWorker) => void;
}

interface Waiting {
  desired: RoutingState;
  /** Resolved once the apply of this (or a newer) state settled. */
  covered: Array<() => void>;
}

interface InFlight {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Runs one sink's applies one at a time (see the header). `submit` never rejects: how an apply
 * ended goes to `onSettled`, and the sink itself reports its targets' failures.
 */
export class SinkWorker {
  readonly sink: Sink;
  readonly #clock: Clock;
  readonly #deadlineMs: number;
  readonly #onSettled: SinkWorkerOptions['onSettled'];
  #inFlight: InFlight | undefined;
  #waiting: Waiting | undefined;

  constructor(options: SinkWorkerOptions) {
    this.sink = options.sink;
    this.#clock = options.clock;
    this.#deadlineMs = options.deadlineMs ?? DEFAULT_SINK_APPLY_DEADLINE_MS;
    if (!(this.#deadlineMs > 0) || !Number.isFinite(this.#deadlineMs)) {
      throw new RangeError(
        `sink apply deadline ${this.#deadlineMs} ms must be a positive finite number`,
      );
    }
    this.#onSettled = options.onSettled;
  }

  /** Whether an apply is in flight. */
  get busy(): boolean {
    return this.#inFlight !== undefined;
  }

  /**
   * Hands the sink `desired`: applied at once when idle, else right after the apply in flight
   * (replacing any state still waiting). Resolves when the apply that covers it has settled.
   */
  submit(desired: RoutingState): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.#inFlight) {
        this.#start({ desired, covered: [resolve] });
      } else if (this.#waiting) {
        this.#waiting.desired = desired;
        this.#waiting.covered.push(resolve);
      } else {
        this.#waiting = { desired, covered: [resolve] };
      }
    });
  }

  /**
   * Aborts the apply in flight with `reason` and drops the waiting state; resolves once the apply
   * settled. The worker may be used again afterwards (a new leadership term).
   */
  stop(reason: unknown): Promise<void> {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    for (const resolve of waiting?.covered ?? []) resolve();
    const inFlight = this.#inFlight;
    inFlight?.controller.abort(reason);
    return inFlight?.done ?? Promise.resolve();
  }

  #start(work: Waiting): void {
    const controller = new AbortController();
    const deadline = new AbortController();
    this.#clock.sleep(this.#deadlineMs, deadline.signal).then(
      () =>
        controller.abort(
          new SinkApplyDeadlineError(
            `${this.sink.kind} apply did not finish within ${this.#deadlineMs} ms`,
          ),
        ),
      () => {}, // the apply settled first
    );
    const inFlight: InFlight = { controller, done: Promise.resolve() };
    this.#inFlight = inFlight;
    inFlight.done = this.sink
      .apply(work.desired, controller.signal)
      .then(
        (): SinkApplyOutcome => ({ result: 'applied' }),
        (error: unknown): SinkApplyOutcome => {
          const reason: unknown = controller.signal.reason;
          if (reason instanceof SinkApplyDeadlineError) return { result: 'failed', error: reason };
          return controller.signal.aborted ? { result: 'aborted' } : { result: 'failed', error };
        },
      )
      .then((outcome) => {
        deadline.abort();
        this.#inFlight = undefined;
        const next = this.#waiting;
        this.#waiting = undefined;
        if (next) this.#start(next);
        for (const resolve of work.covered) resolve();
        this.#onSettled?.(outcome, this);
      });
  }
}
