/**
 * The e2e environment's public surface: what e2e tests import. See kube-environment.ts for the
 * environment itself and kubelet.ts for making pods Running, Ready, restarted or gone.
 */
export { kubeEnvironmentUnavailableReason } from './binaries.js';
export { adminUser, unprivilegedUser } from './credentials.js';
export {
  defaultReadyTimeoutMs,
  type KubeEnvironment,
  type KubeEnvironmentOptions,
  type KubeUser,
  startKubeEnvironment,
} from './kube-environment.js';
export { defaultNodeName, FakeKubelet, onNode, type RunningOptions } from './kubelet.js';
export { type WatchEventRecord, type WatchFailure, WatchProbe } from './watch-probe.js';
