/**
 * Observe mode's report (`--sink-mode observe`): what `apply` would add to and remove from each
 * target, said once per change. Every run recomputes the diff; a diff equal to the one last
 * reported for the target is not logged or published again, so a steady dry run beside a live
 * setup is one log line and one `sink.observed` event per target, not one per drift run.
 */
import type { Logger } from '../runtime/logger.js';
import type { SinkEvent, SinkKind } from './sink.js';

/**
 * Who reports: the sink's kind names the log line and the event; `publish` is absent when the sink
 * was built without a bus.
 */
interface ObservedDiffOptions {
  kind: SinkKind;
  logger: Logger;
  publish: ((event: SinkEvent) => void) | undefined;
}

/**
 * Both sinks' observe-mode reporter, one per sink, so "report a diff only when it changed" is
 * written once. It holds one entry per target, kept for the sink's lifetime.
 */
export class ObservedDiff {
  readonly #kind: SinkKind;
  readonly #logger: Logger;
  readonly #publish: ((event: SinkEvent) => void) | undefined;
  /** By target: the diff last reported, as one comparable text. Bounded by the sink's targets. */
  readonly #reported = new Map<string, string>();

  constructor(options: ObservedDiffOptions) {
    this.#kind = options.kind;
    this.#logger = options.logger;
    this.#publish = options.publish;
  }

  /** Records the diff of `target` computed now; logs and publishes it when it changed. */
  report(target: string, pool: string, wouldAdd: string[], wouldRemove: string[]): void {
    const text = JSON.stringify([wouldAdd, wouldRemove]);
    const last = this.#reported.get(target);
    if (last === text) return;
    this.#reported.set(target, text);
    // A target seen for the first time with nothing to change is not news.
    if (last === undefined && wouldAdd.length === 0 && wouldRemove.length === 0) return;
    this.#logger.info(
      { sink: this.#kind, target, pool, wouldAdd, wouldRemove },
      `${this.#kind} sink (observe mode): apply would change this target; nothing was written`,
    );
    this.#publish?.({
      type: 'sink.observed',
      kind: this.#kind,
      target,
      pool,
      wouldAdd: [...wouldAdd],
      wouldRemove: [...wouldRemove],
    });
  }

  /** The target is gone from the sink: a later diff for it is reported afresh. */
  forget(target: string): void {
    this.#reported.delete(target);
  }
}
