/**
 * Builds the real pod source, the reflector in its worker thread. Imported lazily, so the
 * simulated mode never loads the Kubernetes client (and starts in a fraction of the time).
 */
import type { PodSource } from './pools/pod-source.js';
import type { Logger } from './runtime/logger.js';

export interface KubernetesSourceOptions {
  /** `undefined`: all namespaces. */
  namespace: string | undefined;
  labelSelector: string;
  kubeconfigPath: string | undefined;
  context: string | undefined;
  logger: Logger;
}

export async function createKubernetesSource(options: KubernetesSourceOptions): Promise<PodSource> {
  const { WorkerPodSource } = await import('./kubernetes/worker-source.js');
  return new WorkerPodSource({
    ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
    labelSelector: options.labelSelector,
    ...(options.kubeconfigPath !== undefined ? { kubeconfigPath: options.kubeconfigPath } : {}),
    ...(options.context !== undefined ? { context: options.context } : {}),
    logger: options.logger,
  });
}
