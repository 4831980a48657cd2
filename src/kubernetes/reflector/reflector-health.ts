/**
 * Whether a reflector stream is healthy (`PodSourceStats.healthy`, whose one definition is in
 * ../../model/pod-source-stats.ts), as a pure record fed what happened and when, like
 * ./backoff.ts: the state machine in ./reflector.ts reports progress and the WATCH's fate, asks
 * `at(now)`, and keeps the one timer that re-asks when the answer may change by itself.
 *
 * Healthy = the WATCH is proven now, or the stream is established (it has been in steady state)
 * and made good progress within `unhealthyAfterMs` — a relist or a reconnect under way.
 */

/** What the state machine tells the health record. */
type HealthEvent =
  /** Good progress: a LIST completed, a WATCH proved itself or delivered a frame. */
  | { kind: 'progress' }
  /** The WATCH proved itself: the stream is in steady state from now on. */
  | { kind: 'watch-proven' }
  /**
   * The WATCH ended. `lastProgressAt`: when it last made progress, if it was proven (a stalled
   * one's last frame, else now); the grace for recovery runs from there.
   */
  | { kind: 'watch-ended'; lastProgressAt?: number }
  /** The stream stopped: nothing it did counts any more. */
  | { kind: 'stopped' };

/** The answer at one moment. */
interface HealthReading {
  healthy: boolean;
  /**
   * In how long the answer falls by itself (the grace after progress runs out), when it is
   * healthy only by that grace; absent when only an event can change it.
   */
  recheckInMs?: number;
}

/**
 * Where the stream stands, one value rather than two flags, so that a proven WATCH on a stream
 * never established cannot be written down:
 * - `starting`: not yet in steady state (or stopped): nothing but a proven WATCH is healthy;
 * - `watching`: the running WATCH delivered a frame or stayed open long enough;
 * - `recovering`: it was in steady state (a LIST published, then a WATCH proven), and that WATCH
 *   ended: healthy while the grace after the last progress lasts.
 */
type Phase = 'starting' | 'watching' | 'recovering';

/** One stream's health record: told what happened (`hear`), asked what it makes of it (`at`). */
export class ReflectorHealth {
  readonly #unhealthyAfterMs: number;
  #phase: Phase = 'starting';
  /** Clock time of the last good progress. */
  #lastProgressAt: number | undefined;

  constructor(unhealthyAfterMs: number) {
    this.#unhealthyAfterMs = unhealthyAfterMs;
  }

  /** The running WATCH proved itself and has not ended. */
  get watchProven(): boolean {
    return this.#phase === 'watching';
  }

  hear(event: HealthEvent, now: number): void {
    switch (event.kind) {
      case 'progress':
        this.#lastProgressAt = now;
        return;
      case 'watch-proven':
        this.#phase = 'watching';
        this.#lastProgressAt = now;
        return;
      case 'watch-ended':
        if (this.#phase !== 'watching') return;
        this.#phase = 'recovering';
        this.#lastProgressAt = event.lastProgressAt ?? now;
        return;
      case 'stopped':
        this.#phase = 'starting';
        this.#lastProgressAt = undefined;
        return;
    }
  }

  at(now: number): HealthReading {
    if (this.#phase === 'watching') return { healthy: true };
    const graceLeft =
      this.#phase === 'recovering' && this.#lastProgressAt !== undefined
        ? this.#lastProgressAt + this.#unhealthyAfterMs - now
        : 0;
    return graceLeft > 0 ? { healthy: true, recheckInMs: graceLeft } : { healthy: false };
  }
}
