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
  deploy(desired: D, signal: AbortSignal): DeployResult | Promise<DeployResult>;
}

/**
 * What `deploy` may return (COORDINATION.md amendment 1; kube-rs's `Action::requeue`,
 * controller-runtime's `Result{RequeueAfter}`): `{ requeueAfterMs }` asks the coordinator to run
 * again that many ms after this successful run completed, because the deploy left something that
 * only time settles (a target held by its backoff, a change a target has not shown yet). Nothing
 * else (`undefined`, a missing, zero, negative or non-finite value) asks for anything, so a
 * pipeline never needs a timer of its own.
 */
export type DeployResult =
  // biome-ignore lint/suspicious/noConfusingVoidType: the contract's type; a deploy that returns nothing (`() => void`) must fit it.
  void | { requeueAfterMs?: number };

/**
 * The requeue delay a deploy asked for, or `undefined` when it asked for none: only a positive
 * finite `requeueAfterMs` counts; any other value or shape is ignored, never an error.
 */
export function requeueDelayMs(result: unknown): number | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const value = (result as { requeueAfterMs?: unknown }).requeueAfterMs;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
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
