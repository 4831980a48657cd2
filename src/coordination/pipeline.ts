/**
 * What one reconciliation runs: render the desired state, validate it, deploy it.
 *
 * From haptic's `pkg/controller/pipeline`, called directly by the coordinator rather than through
 * another event hop: a reconciliation is one atomic stage, so a plain call keeps error
 * propagation simple and needs no synchronisation events between the phases.
 */

/** The phases of a reconciliation, in the order they run. */
export type Phase = 'render' | 'validate' | 'deploy';

/**
 * The pipeline's contract: `render` reads a consistent snapshot and has no side effects;
 * `validate` throws to refuse a desired state that must never be deployed; `deploy` is idempotent,
 * honours its signal, and level-triggered: it reads the world's actual state and changes only the
 * difference (drift runs deploy the same state again, so this must be harmless).
 */
export interface Pipeline<D> {
  render(signal: AbortSignal): D | Promise<D>;
  validate?(desired: D, signal: AbortSignal): void | Promise<void>;
  deploy(desired: D, signal: AbortSignal): void | Promise<void>;
}

/** Text for anything thrown: an Error's message, otherwise `String(value)`. */
export function describeThrown(value: unknown): string {
  return value instanceof Error ? value.message : String(value);
}

/**
 * A failed phase, as haptic's `PipelineError`: which phase failed (so metrics and the control
 * plane can tell a refused state from an unreachable target) with what it threw as `cause`.
 */
export class PipelineError extends Error {
  override readonly name = 'PipelineError';
  readonly phase: Phase;

  constructor(phase: Phase, cause: unknown) {
    super(`${phase} failed: ${describeThrown(cause)}`, { cause });
    this.phase = phase;
  }
}
