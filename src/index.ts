/**
 * The package root: the controller runtime's public API (the reference design's RUNTIME.md), under
 * exactly the names the contract gives them, plus the few extras the service builds on.
 */

// Coordination (design/COORDINATION.md): leader election over a Lease, the event bus, and the
// leader-only coordinator that runs the render → validate → deploy pipeline.
export {
  Coordinator,
  type CoordinatorEvent,
  type CoordinatorEventSink,
  type CoordinatorOptions,
  type CoordinatorState,
  CoordinatorStoppedError,
  DEFAULT_COORDINATOR_FAILURE_BASE_DELAY_MS,
  DEFAULT_COORDINATOR_FAILURE_MAX_DELAY_MS,
  DEFAULT_DRIFT_INTERVAL_MS,
  type ReconciliationResult,
} from './coordination/coordinator.js';
export {
  DEFAULT_SUBSCRIPTION_BUFFER_SIZE,
  EventBus,
  type EventBusOptions,
  type SubscribeOptions,
  type Subscription,
} from './coordination/event-bus.js';
export {
  DEFAULT_HEALTH_TOLERANCE_MS,
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LEADER_ELECTION_JITTER_FACTOR,
  LeaderElector,
  type LeaderElectorOptions,
  LeadershipLostError,
} from './coordination/leader-elector.js';
export {
  LeaseConflictError,
  type LeaseLock,
  type LeaseRecord,
  type ObservedLease,
} from './coordination/lease-record.js';
export { formatMicroTime } from './coordination/micro-time.js';
export {
  type DeployResult,
  type Phase,
  type Pipeline,
  PipelineError,
} from './coordination/pipeline.js';
export { ResourceApiError, type ResourceCall } from './kubernetes/client/resource-api-error.js';
// The controller runtime (RUNTIME.md) and the Kubernetes pod source, for pointing a loop at a
// cluster: the `./pods` entry's list, kept in one place (it re-exports the `./runtime` entry). None
// of these import @kubernetes/client-node at load time (only src/kubernetes/client/connection.ts
// does, lazily).
export * from './kubernetes/pods.js';
export {
  connectLeaseLock,
  KubernetesLeaseLock,
  type KubernetesLeaseLockOptions,
} from './kubernetes/resources/lease-lock.js';
