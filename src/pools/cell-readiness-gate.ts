/**
 * The cell readiness gate's condition: what a pod naming it in `spec.readinessGates` should carry,
 * derived from its cell's state alone. Pure, so the rule (True exactly while the cell is alive and
 * routable; False with every why-not, bounded) is tested without a sink, a clock or a cluster, and
 * two runs on the same cell want the same condition (nothing is written twice).
 */
import type { CellState } from './cell-state.js';

/**
 * The default condition type: a domain-prefixed name, as Kubernetes asks of condition types
 * others add to a pod (`target-health.elbv2.k8s.aws/...`, `cloud.google.com/load-balancer-neg-ready`).
 */
export const DEFAULT_CELL_READINESS_GATE_CONDITION = 'pool-controller/cell-alive';

/** The reason of a `True` condition. */
const CELL_ALIVE_REASON = 'CellAlive';

/**
 * The longest `reason`: the codes of every rule that failed, joined by commas. Seven codes of
 * under 20 characters fit; the cut keeps the field a short machine-readable word for `kubectl`.
 */
export const MAX_GATE_REASON_LENGTH = 128;

/**
 * The longest `message`: 1 KiB, the length Kubernetes allows an Event's note. Every why-not
 * sentence is already bounded per pod name (pod-text.ts), but a cell of many pods lists many; the
 * condition is copied into every gated pod of the cell and into each of their watch events.
 */
export const MAX_GATE_MESSAGE_LENGTH = 1_024;

/** The condition the gate wants on every gated pod of one cell. */
export interface GateCondition {
  status: 'True' | 'False';
  /** CamelCase codes, comma-separated: a valid condition reason. */
  reason: string;
  message: string;
}

function bound(text: string, max: number, cut: string): string {
  return text.length <= max ? text : `${text.slice(0, max - cut.length)}${cut}`;
}

/**
 * `True` while the cell is alive and routable (it is in the desired routing state), else `False`
 * with the codes of why not as `reason` and their sentences as `message`, cut to the bounds above.
 */
export function cellGateCondition(cell: CellState): GateCondition {
  if (cell.alive && cell.routable && cell.address !== null) {
    return {
      status: 'True',
      reason: CELL_ALIVE_REASON,
      message: `cell ${cell.id} is alive and routable at ${cell.address}`,
    };
  }
  const reasons = [...cell.whyNotAlive, ...cell.whyNotRoutable];
  // Whole codes only, as many as fit: a reason must stay a list of valid words.
  let reason = '';
  for (const code of new Set(reasons.map((r) => r.reason))) {
    const next = reason === '' ? code : `${reason},${code}`;
    if (next.length > MAX_GATE_REASON_LENGTH) break;
    reason = next;
  }
  const message =
    reasons.length > 0
      ? `cell ${cell.id}: ${reasons.map((r) => r.message).join('; ')}`
      : `cell ${cell.id} has no address to route to`;
  return {
    status: 'False',
    reason: reason || 'NotRoutable',
    message: bound(message, MAX_GATE_MESSAGE_LENGTH, '…'),
  };
}
