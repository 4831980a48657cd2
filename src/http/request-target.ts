/**
 * The first word on every request: the source header on its response, and a 400 for a request
 * target that names no resource here. `GET *` (asterisk-form) or `CONNECT host:443`
 * (authority-form) would otherwise be served as `/` by the router; absolute-form
 * (`http://host/path`) is a path to it.
 */
import type { ControlPlane } from '../service/control-plane.js';
import { errorBody, SOURCE_HEADER } from './error-shape.js';
import { rootPlugin } from './root-plugin.js';

/** An origin-form (`/path`) or absolute-form (`http://host/path`) request target. */
function isResourceTarget(target: string): boolean {
  if (target.startsWith('/')) return true;
  const lower = target.slice(0, 8).toLowerCase();
  return lower.startsWith('http://') || lower.startsWith('https://');
}

/** Longest part of a request target quoted back in an error. */
const QUOTED_TARGET_LENGTH = 64;

function quoteTarget(target: string): string {
  return target.length <= QUOTED_TARGET_LENGTH
    ? JSON.stringify(target)
    : `${JSON.stringify(target.slice(0, QUOTED_TARGET_LENGTH))}…`;
}

/** Registered first, so every answer after it, the other hooks' refusals included, names the source. */
export const requestTarget = rootPlugin<{ plane: Pick<ControlPlane, 'sourceKind'> }>(
  'request-target',
  async (app, { plane }) => {
    app.addHook('onRequest', async (request, reply) => {
      reply.header(SOURCE_HEADER, plane.sourceKind);
      const target = request.raw.url ?? '';
      if (!isResourceTarget(target)) {
        return reply
          .code(400)
          .send(
            errorBody(
              400,
              `the request target must be a path such as /healthz, got ${quoteTarget(target)}`,
            ),
          );
      }
    });
  },
);
