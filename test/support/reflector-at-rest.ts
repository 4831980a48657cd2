/**
 * The reflector's resting point, for tests that drive it through a `FakePodApi`: the moment it
 * has done all it can without the fake clock or the test, so "nothing else happened" can be
 * asserted without counting event-loop turns.
 */
import type { KubernetesReflector } from '../../src/kubernetes/reflector/reflector.js';
import type { FakePodApi } from './fake-pod-api.js';
import { until } from './until.js';

/**
 * Waits until `reflector` reads the newest watch (a watch-list's too) with every pushed frame
 * handled, waits out a backoff, waits on a LIST or WATCH that hangs, or stopped.
 */
export function reflectorAtRest(h: {
  api: FakePodApi;
  reflector: Pick<KubernetesReflector, 'stats'>;
}): Promise<void> {
  return until(
    () => {
      const { phase } = h.reflector.stats();
      if (phase === 'backoff' || phase === 'stopped') return true;
      if (phase !== 'listing' && phase !== 'watching') return false;
      // The request in flight is the newest one: a LIST, or a WATCH (a watch-list reads its
      // initial events while still listing).
      if (h.api.requests.at(-1)?.verb === 'LIST') {
        const list = h.api.lists.at(-1);
        return list?.outcome === 'hang' && !list.aborted;
      }
      const watch = h.api.watches.at(-1);
      return watch !== undefined && (watch.awaitingFrame || watch.hung);
    },
    { what: 'the reflector to come to rest' },
  );
}
