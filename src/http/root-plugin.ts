/**
 * Marks a Fastify plugin as the root's own, as `fastify-plugin` does, without that dependency:
 * Fastify encapsulates every registered plugin, so a hook or handler set inside one would reach
 * only routes registered inside it too. The control plane's plugins set hooks every route must
 * run (the source header, the admin gate, the shutdown 503), so they skip encapsulation.
 */
import type { FastifyPluginAsync } from 'fastify';

/** `plugin`, marked to run on the instance that registers it instead of on an encapsulated child. */
export function rootPlugin<Options extends object>(
  name: string,
  plugin: FastifyPluginAsync<Options>,
): FastifyPluginAsync<Options> {
  return Object.assign(plugin, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: name,
  });
}
