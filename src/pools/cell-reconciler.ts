/**
 * The service's reconcile: re-derive one cell from the store and publish it.
 *
 * Level-triggered: it gets only the parent key and reads the cell's members as they are now, so
 * it neither knows nor cares which event (or resync, or manual POST) queued it, and running it
 * twice publishes the same state once.
 */
import type { Pod } from '../model/pod.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import type { ParentKey } from '../runtime/source-event.js';
import type { CellRegistry, CellTransition } from './cell-registry.js';
import { type CellStateOptions, deriveCellState } from './cell-state.js';

/**
 * What the reconcile reads and writes: `members` is the store's view by parent (the reconcile never
 * holds pods of its own), `registry` is where it publishes; the cell-state options decide how the
 * members are judged.
 */
interface CellReconcilerOptions extends CellStateOptions {
  /** The cell's members as the store holds them now (`ReconcileLoop.getByParent`). */
  members: (key: ParentKey) => readonly Pod[];
  registry: CellRegistry;
  logger?: Logger;
  /** Called once per transition after it is logged (the service counts them in metrics). */
  onTransition?: (transition: CellTransition) => void;
}

/** Logs one line per transition, with the cell's identity as structured fields. */
function logTransition(logger: Logger, transition: CellTransition): void {
  if (transition.type === 'gone') {
    const { last } = transition;
    logger.info(
      { cell: last.id, namespace: last.namespace, pool: last.pool, key: transition.key },
      'cell gone',
    );
    return;
  }
  const { cell } = transition;
  const fields = {
    cell: cell.id,
    namespace: cell.namespace,
    pool: cell.pool,
    generation: cell.generation,
    members: cell.members.length,
  };
  switch (transition.type) {
    case 'appeared':
      logger.info(
        {
          ...fields,
          alive: cell.alive,
          // `reasons` holds codes on every line; the messages go into the text, as for not-alive.
          ...(cell.alive ? {} : { reasons: cell.whyNotAlive.map((r) => r.reason) }),
        },
        cell.alive
          ? 'cell appeared, alive'
          : `cell appeared, not alive: ${cell.whyNotAlive.map((r) => r.message).join('; ')}`,
      );
      return;
    case 'alive':
      logger.info(
        {
          ...fields,
          address: cell.address,
          ...(cell.routable ? {} : { notRoutable: cell.whyNotRoutable.map((r) => r.reason) }),
        },
        cell.routable ? 'cell alive' : 'cell alive, not routable',
      );
      return;
    case 'routability-changed':
      if (cell.routable) {
        logger.info({ ...fields, address: cell.address }, 'cell routable');
        return;
      }
      logger.warn(
        { ...fields, address: cell.address, reasons: transition.reasons.map((r) => r.reason) },
        `cell not routable, left out of every sink: ${transition.reasons.map((r) => r.message).join('; ')}`,
      );
      return;
    case 'not-alive':
      logger.warn(
        { ...fields, reasons: transition.reasons.map((r) => r.reason) },
        `cell not alive: ${transition.reasons.map((r) => r.message).join('; ')}`,
      );
      return;
    case 'generation-changed':
      logger.info(
        { ...fields, from: transition.from, to: transition.to },
        'cell generation changed',
      );
      return;
    case 'address-changed':
      logger.info({ ...fields, from: transition.from, to: transition.to }, 'cell address changed');
      return;
  }
}

/**
 * The reconcile function the loop calls per key: derive the cell from its members now, publish it,
 * log and report each transition. It throws only when `signal` has already aborted, so a shutdown
 * never publishes half a world.
 */
export function createCellReconciler(
  options: CellReconcilerOptions,
): (key: ParentKey, signal: AbortSignal) => Promise<void> {
  const { members, registry, onTransition, logger: given, ...judging } = options;
  const logger = given ?? silentLogger;
  // The rest of the options are the cell-state options, passed on as given.
  const stateOptions: CellStateOptions = {
    ...judging,
    allowLoopback: judging.allowLoopback ?? false,
  };
  return async (key, signal) => {
    // A reconcile interrupted by shutdown publishes nothing rather than half a world.
    signal.throwIfAborted();
    const state = deriveCellState(key, members(key), stateOptions);
    for (const transition of registry.publish(key, state)) {
      logTransition(logger, transition);
      onTransition?.(transition);
    }
  };
}
