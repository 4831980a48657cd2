/**
 * A `PodApi` of the model's `Pod`s (a test's fake) as the worker thread's `PodApi<EncodedPod>`:
 * each listed pod is encoded as the JSON path of `HttpPodApi` encodes one (`encodePod`); watch
 * frames pass as they are, since the reflector reads their objects into its form itself.
 */
import { type EncodedPod, encodePod } from '../../src/kubernetes/codec/encoded-pod.js';
import type { PodApi } from '../../src/kubernetes/resources/pod-api.js';
import type { Pod } from '../../src/model/pod.js';

export function asEncodedPodApi(api: PodApi<Pod>): PodApi<EncodedPod> {
  return {
    async listPods({ onPage, ...rest }) {
      const encoded = new Map<Pod, EncodedPod>();
      const encode = (pod: Pod): EncodedPod => {
        let found = encoded.get(pod);
        if (!found) {
          found = encodePod(pod);
          encoded.set(pod, found);
        }
        return found;
      };
      const list = await api.listPods(
        onPage
          ? { ...rest, onPage: (progress, items) => onPage(progress, items.map(encode)) }
          : rest,
      );
      return { pods: list.pods.map(encode), resourceVersion: list.resourceVersion };
    },
    watchPods: (options) => api.watchPods(options),
  };
}
