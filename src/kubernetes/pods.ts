/**
 * The `./pods` package entry: the controller runtime plus the Kubernetes pod source
 * (`WorkerPodSource`, the partial `Pod` it yields, its stats), for a loop over a cluster's pods
 * without the HTTP service. Beyond the runtime it loads `piscina` (the worker thread) and `zod`
 * (the pod schema), which the `@pool-controller/runtime` package lists as optional peers; the
 * Kubernetes client is the bundled KubeConfig loader, read only when a stream starts.
 */

export {
  type Container,
  type ContainerPort,
  type ContainerState,
  type ContainerStatus,
  MalformedPodError,
  type OwnerReference,
  type Pod,
  type PodCondition,
  type PodMetadata,
  type PodSpec,
  type PodStatus,
  parsePod,
  podKey,
} from '../model/pod.js';
export type {
  DropReason,
  InitialListMode,
  ListProgress,
  PodSourceStats,
  ReflectorPhase,
  RelistReason,
} from '../model/pod-source-stats.js';
// The list `InitialListMode` is derived from, so the type's documentation can name it.
export { INITIAL_LIST_MODES } from '../model/pod-source-stats.js';
export * from '../runtime/index.js';
export {
  type ApiConnection,
  type ClusterOptions,
  checkClusterConfig,
  KubeConfigError,
  type KubeconfigContext,
} from './client/connection.js';
export type { BackoffOptions as ReflectorBackoffOptions } from './reflector/backoff.js';
export {
  WorkerPodSource,
  type WorkerPodSourceOptions,
} from './reflector-worker/main-thread-source.js';
export {
  type ReflectorThreadOptions,
  ReflectorThreads,
} from './reflector-worker/reflector-threads.js';
