/**
 * The parts the flags choose, connected to the cluster: the pod source, leadership (a Lease or
 * this process alone), the sinks, the Kubernetes Event recorder and the workload source. Each is
 * handed to `assembleService` as the factory its options take, so the assembly builds it in its
 * place in the order; connecting (a kubeconfig, a Lease lock, an API client) happens here first,
 * so a cluster that cannot be reached fails at start rather than on first use. Modules for a part
 * the flags leave off are never imported.
 */
import { hostname } from 'node:os';
import type { pino } from 'pino';
import type { Config } from '../cli/config.js';
import { type HostFacts, resolveLeaseNamespace, type SourceChoice } from '../cli/source-choice.js';
import type { KubeconfigContext } from '../kubernetes/client/connection.js';
import type { ReflectorThreads } from '../kubernetes/reflector-worker/reflector-threads.js';
import type { PodSource } from '../model/pod-source.js';
import { DEFAULT_SIMULATED_NAMESPACE, SimulatedPodSource } from '../simulated/simulated-source.js';
import type { Sink } from '../sinks/sink.js';
import type { SinkBaseOptions, SinkCallRecord } from '../sinks/sink-context.js';
import type { AssembleOptions, SinkWiring } from './assemble.js';
import {
  type Leadership,
  type LeadershipHooks,
  LeaseLeadership,
  leaderIdentity,
  SoleLeadership,
} from './leadership.js';

/** Where the cluster is, as the flags say: for every connection the service makes. */
export function clusterOptions(config: Config): { kubeconfigPath?: string; context?: string } {
  return {
    ...(config.kubeconfig !== undefined ? { kubeconfigPath: config.kubeconfig } : {}),
    ...(config.context !== undefined ? { context: config.context } : {}),
  };
}

/**
 * The pod source `--source` chose: the simulated world, or the reflector in its worker thread
 * (imported only then, so the simulated mode never loads its module graph), its first stream
 * already open.
 */
export async function createPodSource(
  config: Config,
  choice: SourceChoice,
  namespace: string | undefined,
  logger: pino.Logger,
  /** The reflector's thread if already started (the command's entry starts it early). */
  reflectorThreads?: ReflectorThreads,
): Promise<PodSource> {
  if (choice.kind === 'simulated') {
    return new SimulatedPodSource({
      labels: config.labels,
      namespace: namespace ?? DEFAULT_SIMULATED_NAMESPACE,
      portName: config.portName,
      stepIntervalMs: config.simulationStepMs,
      logger: logger.child({ component: 'simulation' }),
    });
  }
  const { WorkerPodSource } = await import('../kubernetes/reflector-worker/main-thread-source.js');
  const source = new WorkerPodSource({
    ...(namespace !== undefined ? { namespace } : {}),
    labelSelector: config.selector,
    ...clusterOptions(config),
    apiContentType: config.kubeApiContentType,
    apiCompression: config.kubeApiCompression,
    apiHttp2: config.kubeApiHttp2,
    initialList: config.initialList,
    logger: logger.child({ component: 'reflector' }),
    ...(reflectorThreads ? { threads: reflectorThreads } : {}),
  });
  // The first LIST leaves now, while the caller loads and builds the rest of the service; the
  // loop's first stream takes it over. The caller owns the source from here: it must close it on
  // any failure, as it now holds a connection.
  source.openFirstStream();
  return source;
}

/**
 * Leadership as configured: a Lease with the kubernetes source (unless `--leader-elect=false`),
 * this process alone otherwise. The Lease lock is prepared here, so a kubeconfig that cannot
 * reach the cluster fails at start rather than on the first campaign.
 */
async function createLeadership(
  config: Config,
  choice: SourceChoice,
  facts: HostFacts,
  watchedNamespace: string | undefined,
  context: KubeconfigContext | undefined,
  logger: pino.Logger,
): Promise<(hooks: LeadershipHooks) => Leadership> {
  const identity = leaderIdentity(facts.env);
  const enabled = config.leaderElection.enabled ?? choice.kind === 'kubernetes';
  const log = logger.child({ component: 'leader-election' });
  if (!enabled || choice.kind === 'simulated') {
    const reason =
      choice.kind === 'simulated'
        ? 'the simulated source has no cluster, so no Lease'
        : '--leader-elect=false: every replica acts; run exactly one';
    if (choice.kind === 'simulated' && config.leaderElection.enabled) {
      log.warn('--leader-elect has no effect with the simulated source: there is no Lease');
    }
    return (hooks) => new SoleLeadership({ identity, reason, hooks, logger: log });
  }
  const namespace = await resolveLeaseNamespace(config, facts, watchedNamespace, context);
  const { connectLeaseLock } = await import('../kubernetes/resources/lease-lock.js');
  const lock = await connectLeaseLock({
    namespace,
    name: config.leaderElection.resourceName,
    // client-go's rule: each Lease request is bounded by half the renew deadline, at least 1 s.
    requestTimeoutMs: Math.max(1_000, config.leaderElection.renewDeadlineMs / 2),
    ...clusterOptions(config),
  });
  return (hooks) =>
    new LeaseLeadership({
      lock,
      identity,
      leaseDurationMs: config.leaderElection.leaseDurationMs,
      renewDeadlineMs: config.leaderElection.renewDeadlineMs,
      retryPeriodMs: config.leaderElection.retryPeriodMs,
      hooks,
      logger: log,
    });
}

/**
 * What every sink takes from the service's wiring (mode, bus, operation counter, clock, backoff
 * cap), with a logger naming its component: the same for each, so no sink can be wired apart.
 */
function wiredSinkOptions(
  wiring: SinkWiring,
  logger: pino.Logger,
  component: string,
): SinkBaseOptions<SinkCallRecord> {
  return {
    mode: wiring.mode,
    logger: logger.child({ component }),
    publish: wiring.publish,
    onOperation: wiring.onOperation,
    clock: wiring.clock,
    backoffMaxMs: wiring.backoffMaxMs,
  };
}

/**
 * The deploy targets the flags name: SGLang routers, and EndpointSlices when published (the
 * kubernetes source only: the simulated one has no cluster to write to). `namespace` is the
 * watched one, `undefined` for all namespaces.
 */
async function createSinks(
  config: Config,
  choice: SourceChoice,
  namespace: string | undefined,
  routerApiKey: string | undefined,
  logger: pino.Logger,
): Promise<((wiring: SinkWiring) => Sink[]) | undefined> {
  const factories: Array<(wiring: SinkWiring) => Sink> = [];
  if (config.sglangRouters.length > 0) {
    const { SglangRouterSink } = await import('../sinks/sglang-router.js');
    // One sink per router (both roles of a prefill/decode router in one): each sink applies on
    // its own worker, so a router that never answers holds back no other router's changes.
    const byRouter = new Map<string, typeof config.sglangRouters>();
    for (const target of config.sglangRouters) {
      const url = target.url.replace(/\/+$/, '');
      byRouter.set(url, [...(byRouter.get(url) ?? []), target]);
    }
    for (const targets of byRouter.values()) {
      factories.push(
        (wiring) =>
          new SglangRouterSink({
            ...wiredSinkOptions(wiring, logger, 'sglang-router'),
            targets,
            ownership: config.sglangRouterOwnership,
            ...(routerApiKey !== undefined ? { apiKey: routerApiKey } : {}),
          }),
      );
    }
  }
  if (config.eppEndpointsFiles.length > 0) {
    const { EppEndpointsFileSink } = await import('../sinks/epp-endpoints-file.js');
    factories.push(
      (wiring) =>
        new EppEndpointsFileSink({
          ...wiredSinkOptions(wiring, logger, 'epp-endpoints-file'),
          targets: config.eppEndpointsFiles,
        }),
    );
  }
  if (config.publishEndpointSlices && choice.kind === 'simulated') {
    logger.warn(
      '--publish-endpointslices has no effect with the simulated source: there is no cluster',
    );
  } else if (config.publishEndpointSlices) {
    const { connectEndpointSliceApi } = await import(
      '../kubernetes/resources/endpointslice-api.js'
    );
    const { EndpointSliceSink } = await import('../sinks/endpointslice.js');
    const api = await connectEndpointSliceApi({
      ...clusterOptions(config),
    });
    factories.push(
      (wiring) =>
        new EndpointSliceSink({
          ...wiredSinkOptions(wiring, logger, 'endpointslice'),
          api,
          namespace,
          portName: config.portName,
          serviceSuffix: config.endpointSliceServiceSuffix,
        }),
    );
  }
  if (config.cellReadinessGate && choice.kind === 'simulated') {
    logger.warn(
      '--cell-readiness-gate has no effect with the simulated source: there are no pods to write to',
    );
  } else if (config.cellReadinessGate) {
    const { connectPodConditionApi } = await import('../kubernetes/resources/pod-condition-api.js');
    const { ReadinessGateSink } = await import('../sinks/readiness-gate.js');
    const api = await connectPodConditionApi({ ...clusterOptions(config) });
    factories.push(
      (wiring) =>
        new ReadinessGateSink({
          ...wiredSinkOptions(wiring, logger, 'readiness-gate'),
          api,
          conditionType: config.cellReadinessGateCondition,
          cells: wiring.cells,
          pods: wiring.pods,
          ...(wiring.onConditionWrite ? { onWrite: wiring.onConditionWrite } : {}),
        }),
    );
  }
  if (factories.length === 0) return undefined;
  return (wiring) => factories.map((create) => create(wiring));
}

/**
 * The Kubernetes Event recorder when `--events` is on (its default with the kubernetes source),
 * and the controller's own pod that sink Events are about (`POD_NAME`, `POD_NAMESPACE`, as the
 * Deployment sets them; without them there are cell Events only).
 */
async function createKubernetesEvents(
  config: Config,
  choice: SourceChoice,
  env: NodeJS.ProcessEnv,
  logger: pino.Logger,
): Promise<Pick<AssembleOptions, 'kubernetesEvents' | 'selfPod'>> {
  const enabled = config.events ?? choice.kind === 'kubernetes';
  if (!enabled) return {};
  if (choice.kind === 'simulated') {
    logger.warn('--events has no effect with the simulated source: there is no cluster');
    return {};
  }
  const { connectEventApi } = await import('../kubernetes/resources/event-api.js');
  const { EventRecorder } = await import('../kubernetes/resources/event-recorder.js');
  const api = await connectEventApi({ ...clusterOptions(config) });
  const podName = env.POD_NAME?.trim();
  const podNamespace = env.POD_NAMESPACE?.trim();
  const log = logger.child({ component: 'events' });
  if (!podName || !podNamespace) {
    log.info(
      'POD_NAME or POD_NAMESPACE unset: no SinkFailed/SinkRecovered Events (cell Events only)',
    );
  }
  return {
    kubernetesEvents: (hooks) =>
      new EventRecorder({
        api,
        reportingController: 'pool-controller',
        reportingInstance: podName || hostname(),
        logger: log,
        onEmitted: hooks.onEmitted,
        onDropped: hooks.onDropped,
      }),
    ...(podName && podNamespace
      ? { selfPod: { apiVersion: 'v1', kind: 'Pod', namespace: podNamespace, name: podName } }
      : {}),
  };
}

/**
 * The pools' workloads when `--watch-leaderworkersets` is on (its default with the kubernetes
 * source): the LeaderWorkerSets of the watched namespace (`undefined`: all). Otherwise why not,
 * for every pool's `capacityReason`.
 */
async function createWorkloads(
  config: Config,
  choice: SourceChoice,
  namespace: string | undefined,
  logger: pino.Logger,
): Promise<Pick<AssembleOptions, 'workloads' | 'workloadsOffReason'>> {
  const enabled = config.watchLeaderWorkerSets ?? choice.kind === 'kubernetes';
  if (choice.kind === 'simulated') {
    if (config.watchLeaderWorkerSets) {
      logger.warn(
        '--watch-leaderworkersets has no effect with the simulated source: there is no cluster',
      );
    }
    return {
      workloadsOffReason:
        'the simulated source has no LeaderWorkerSets: the pool is judged by its cells alone',
    };
  }
  if (!enabled) {
    return {
      workloadsOffReason: '--watch-leaderworkersets=false: the pool is judged by its cells alone',
    };
  }
  const { connectLeaderWorkerSetApi } = await import(
    '../kubernetes/resources/leaderworkerset-api.js'
  );
  const { LeaderWorkerSetSource } = await import(
    '../kubernetes/resources/leaderworkerset-source.js'
  );
  const api = await connectLeaderWorkerSetApi({ ...clusterOptions(config) });
  const log = logger.child({ component: 'workloads' });
  return {
    workloads: ({ onStatus }) =>
      new LeaderWorkerSetSource({ api, namespace, logger: log, onStatus }),
  };
}

/** Where the service runs and what it watches, as main resolved them from the flags. */
interface ConfiguredPartsInput {
  config: Config;
  choice: SourceChoice;
  facts: HostFacts;
  /** The watched namespace; `undefined` for all namespaces. */
  namespace: string | undefined;
  /** The kubeconfig context in use (kubernetes source): where the Lease's namespace comes from. */
  context: KubeconfigContext | undefined;
  routerApiKey: string | undefined;
  logger: pino.Logger;
}

/** The Kubernetes-side parts the flags choose, as `assembleService` takes them. */
export type ConfiguredParts = Pick<
  AssembleOptions,
  'leadership' | 'sinks' | 'kubernetesEvents' | 'selfPod' | 'workloads' | 'workloadsOffReason'
>;

/**
 * Connects every Kubernetes-side part the flags choose, in the order the assembly builds them.
 * Throws a `ConfigError` or `KubeConfigError` for a configuration that can never work.
 */
export async function connectConfiguredParts(
  input: ConfiguredPartsInput,
): Promise<ConfiguredParts> {
  const { config, choice, facts, namespace, context, routerApiKey, logger } = input;
  const leadership = await createLeadership(config, choice, facts, namespace, context, logger);
  const sinks = await createSinks(config, choice, namespace, routerApiKey, logger);
  const kubernetesEvents = await createKubernetesEvents(config, choice, facts.env, logger);
  const workloads = await createWorkloads(config, choice, namespace, logger);
  return { leadership, ...(sinks ? { sinks } : {}), ...kubernetesEvents, ...workloads };
}
