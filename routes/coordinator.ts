/** `GET /api/v1/coordinator` and `GET /api/v1/sinks`: what the acting half does and has done. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { durationMs } from './duration.js';
import { commonErrors, coordinatorSchema, sinksSchema } from './schemas.js';

type CoordinatorState = ReturnType<ControlPlane['coordinator']>['state'];

/** The run state of the coordinator as JSON: absent values as `null`, times as wall and ago. */
function runStateView(plane: ControlPlane, state: CoordinatorState) {
  const now = plane.now();
  const retryAt = state.nextRetryAtMs;
  const last = state.lastCompleted;
  return {
    running: state.running,
    runningId: state.runningId ?? null,
    pendingReasons: state.pendingReasons,
    consecutiveFailures: state.consecutiveFailures,
    lastError: state.lastError
      ? { phase: state.lastError.phase, message: state.lastError.message }
      : null,
    nextRetryAt: retryAt === undefined ? null : plane.wallTime(retryAt),
    nextRetryInMs: retryAt === undefined ? null : durationMs(now, retryAt),
    lastCompleted: last
      ? {
          id: last.id,
          result: last.result,
          at: plane.wallTime(last.atMs),
          agoMs: durationMs(last.atMs, now),
        }
      : null,
  };
}

/**
 * `GET /api/v1/coordinator`'s answer, read from the plane now: also what the status page's first
 * paint reduces to its Coordinator card, as the browser does with the same answer.
 */
export function coordinatorAnswer(plane: ControlPlane) {
  const view = plane.coordinator();
  return {
    source: plane.sourceKind,
    leading: view.leading,
    acting: view.acting,
    cellsSynced: view.cellsSynced,
    state: runStateView(plane, view.state),
    desired: view.desired,
  };
}

/** The plugin's one option: the control plane, the only part of the service a route may read. */
interface CoordinatorRoutesOptions {
  plane: ControlPlane;
}

/**
 * Registers `GET /api/v1/coordinator` and `GET /api/v1/sinks`. Every replica answers both: a
 * follower shows a stopped coordinator and its locally rendered desired state, so replicas can be
 * compared.
 */
export const coordinatorRoutes: FastifyPluginAsyncZod<CoordinatorRoutesOptions> = async (
  app,
  { plane },
) => {
  app.get(
    '/api/v1/coordinator',
    {
      schema: {
        operationId: 'getCoordinator',
        summary: 'The coordinator',
        description:
          "The coordinator's state (runs, retries, last error) and the desired routing state. On a follower the coordinator is stopped and the desired state is rendered locally, never deployed.",
        tags: ['coordination'],
        response: { 200: coordinatorSchema, ...commonErrors },
      },
    },
    async () => coordinatorAnswer(plane),
  );

  app.get(
    '/api/v1/sinks',
    {
      schema: {
        operationId: 'listSinks',
        summary: 'Sink targets',
        description:
          'Every deploy target (SGLang router per pool, EndpointSlice per pool and port): what is desired, what was last read from it, what is pending, and how the last apply went.',
        tags: ['coordination'],
        response: { 200: sinksSchema, ...commonErrors },
      },
    },
    async () => ({ source: plane.sourceKind, ...plane.sinkSettings(), sinks: plane.sinks() }),
  );
};
