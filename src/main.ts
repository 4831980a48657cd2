#!/usr/bin/env node
/**
 * The `pool-controller` command: configuration → pod source → service → HTTP control plane, and
 * an orderly shutdown on SIGTERM/SIGINT.
 *
 * Order at start: listen first (liveness answers at once, readiness says "not synced"), then
 * start the loop. Order at shutdown: fail readiness, stop accepting requests and finish those in
 * flight, stop the loop (the in-flight reconcile is aborted and awaited), stop the source (the
 * reflector's worker thread); all within --shutdown-timeout, else exit anyway.
 *
 * Size: the command's whole sequence (config, source, leadership, sinks, service, HTTP, shutdown),
 * read top to bottom; each piece it calls lives elsewhere.
 */
import { hostname } from 'node:os';
import { pino } from 'pino';
import {
  type Config,
  ConfigError,
  HelpRequested,
  parseConfig,
  VersionRequested,
} from './cli/config.js';
import { PRETTY_OPTIONS, serviceLoggerOptions } from './cli/log-options.js';
import { loadAdminToken, loadSecretFile } from './cli/secret-file.js';
import {
  chooseSource,
  type HostFacts,
  realHostFacts,
  resolveLeaseNamespace,
  resolveNamespace,
  type SourceChoice,
} from './cli/source-choice.js';
import { buildServer } from './http/app.js';
import { buildProbeServer } from './http/probe-app.js';
import type { KubeconfigContext } from './kubernetes/client/connection.js';
import type { PodSource } from './model/pod-source.js';
import { realClock } from './runtime/clock.js';
import { type AssembleOptions, assembleService, type SinkWiring } from './service/assemble.js';
import { buildInfo, versionLine } from './service/build-info.js';
import {
  type Leadership,
  type LeadershipHooks,
  LeaseLeadership,
  leaderIdentity,
  SoleLeadership,
} from './service/leadership.js';
import { DEFAULT_SIMULATED_NAMESPACE, SimulatedPodSource } from './simulated/simulated-source.js';
import type { Sink } from './sinks/sink.js';
import type { SinkBaseOptions, SinkCallRecord } from './sinks/sink-context.js';

/** Exit code for a configuration error: distinct from a crash (1), as `kubectl` and Go flag parsing use 2. */
const EXIT_USAGE = 2;

/**
 * A configuration that can never work (a flag, a kubeconfig) is one line on stderr and exit 2;
 * anything else is rethrown. Its messages never quote a file's contents (ConfigError and
 * KubeConfigError are built that way).
 */
function usageExit(err: unknown): number {
  if (err instanceof ConfigError || (err as Error).name === 'KubeConfigError') {
    process.stderr.write(`pool-controller: ${(err as Error).message}\n`);
    return EXIT_USAGE;
  }
  throw err;
}

/** Where the cluster is, as the flags say: for every connection the service makes. */
function clusterOptions(config: Config): { kubeconfigPath?: string; context?: string } {
  return {
    ...(config.kubeconfig !== undefined ? { kubeconfigPath: config.kubeconfig } : {}),
    ...(config.context !== undefined ? { context: config.context } : {}),
  };
}

function simulatedBanner(choice: SourceChoice): string {
  const line = '='.repeat(78);
  return [
    line,
    '  SIMULATED SOURCE: no cluster is being watched. Every pod, cell and pool this',
    '  service shows is made up by an in-process story (see docs/service.md).',
    `  Why: ${choice.reason}.`,
    '  Use --source kubernetes (and --kubeconfig) to watch a real cluster.',
    line,
  ].join('\n');
}

async function createPodSource(
  config: Config,
  choice: SourceChoice,
  namespace: string | undefined,
  logger: pino.Logger,
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
  // Imported here, so the simulated mode never loads the reflector's module graph.
  const { WorkerPodSource } = await import('./kubernetes/reflector-worker/main-thread-source.js');
  return new WorkerPodSource({
    ...(namespace !== undefined ? { namespace } : {}),
    labelSelector: config.selector,
    ...clusterOptions(config),
    apiContentType: config.kubeApiContentType,
    apiCompression: config.kubeApiCompression,
    initialList: config.initialList,
    logger: logger.child({ component: 'reflector' }),
  });
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
  const { connectLeaseLock } = await import('./kubernetes/resources/lease-lock.js');
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
    const { SglangRouterSink } = await import('./sinks/sglang-router.js');
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
    const { EppEndpointsFileSink } = await import('./sinks/epp-endpoints-file.js');
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
    const { connectEndpointSliceApi } = await import('./kubernetes/resources/endpointslice-api.js');
    const { EndpointSliceSink } = await import('./sinks/endpointslice.js');
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
    const { connectPodConditionApi } = await import('./kubernetes/resources/pod-condition-api.js');
    const { ReadinessGateSink } = await import('./sinks/readiness-gate.js');
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
  const { connectEventApi } = await import('./kubernetes/resources/event-api.js');
  const { EventRecorder } = await import('./kubernetes/resources/event-recorder.js');
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
    './kubernetes/resources/leaderworkerset-api.js'
  );
  const { LeaderWorkerSetSource } = await import(
    './kubernetes/resources/leaderworkerset-source.js'
  );
  const api = await connectLeaderWorkerSetApi({ ...clusterOptions(config) });
  const log = logger.child({ component: 'workloads' });
  return {
    workloads: ({ onStatus }) =>
      new LeaderWorkerSetSource({ api, namespace, logger: log, onStatus }),
  };
}

/**
 * JSON lines for collectors, or pino-pretty for a person: `--log-format`, else pretty exactly when
 * stdout is a terminal, so `npm start` reads well and a pod's log stays JSON.
 */
async function createLogger(config: Config): Promise<pino.Logger> {
  const format = config.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json');
  const options = serviceLoggerOptions(config.logLevel, format);
  if (format === 'json') return pino(options);
  const { default: pretty } = await import('pino-pretty');
  // Synchronous, so lines keep their order with the banner on stderr and none is lost at exit.
  return pino(
    options,
    pretty({ ...PRETTY_OPTIONS, sync: true, colorize: Boolean(process.stdout.isTTY) }),
  );
}

async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let config: Config;
  let adminToken: string | undefined;
  let routerApiKey: string | undefined;
  let choice: SourceChoice;
  /** The kubeconfig context in use (kubernetes source): where the default namespace comes from. */
  let context: KubeconfigContext | undefined;
  const facts = { ...realHostFacts(), env };
  /** Said once the logger exists: a group- or world-readable secret file, for instance. */
  const startWarnings: string[] = [];
  const warn = (message: string): void => {
    startWarnings.push(message);
  };
  try {
    config = parseConfig(argv, env);
    adminToken = config.adminTokenFile
      ? await loadAdminToken(config.adminTokenFile, warn)
      : undefined;
    routerApiKey = config.sglangRouterApiKeyFile
      ? await loadSecretFile(config.sglangRouterApiKeyFile, 'sglang-router-api-key-file', warn)
      : undefined;
    choice = chooseSource(config, facts);
    if (choice.kind === 'kubernetes') {
      // A kubeconfig that can never work (syntax, empty, a directory, unreadable, an unknown
      // context, plain http without insecure-skip-tls-verify) fails now, not every second later.
      const { checkClusterConfig } = await import('./kubernetes/client/connection.js');
      context = await checkClusterConfig({
        ...clusterOptions(config),
      });
    }
  } catch (err) {
    if (err instanceof HelpRequested) {
      process.stdout.write(err.message);
      return 0;
    }
    if (err instanceof VersionRequested) {
      process.stdout.write(`${versionLine(buildInfo())}\n`);
      return 0;
    }
    return usageExit(err);
  }

  const logger = await createLogger(config);
  logger.info(buildInfo(), 'starting');
  for (const message of startWarnings) logger.warn(message);
  if (choice.kind === 'simulated') {
    process.stderr.write(`${simulatedBanner(choice)}\n`);
    logger.warn(
      { source: 'simulated', reason: choice.reason },
      'SIMULATED SOURCE: serving a made-up world, not a cluster',
    );
  } else {
    logger.info({ source: 'kubernetes', reason: choice.reason }, 'watching a Kubernetes cluster');
  }
  let namespace: string | undefined;
  if (config.sinkMode === 'observe') {
    logger.warn(
      { sinkMode: 'observe' },
      '--sink-mode observe: a dry run; the sinks read their targets and report what they would change, and never write',
    );
  }
  let leadership: (hooks: LeadershipHooks) => Leadership;
  let sinks: ((wiring: SinkWiring) => Sink[]) | undefined;
  let kubernetesEvents: Pick<AssembleOptions, 'kubernetesEvents' | 'selfPod'>;
  let workloads: Pick<AssembleOptions, 'workloads' | 'workloadsOffReason'>;
  try {
    if (choice.kind === 'simulated') {
      namespace =
        config.namespace === undefined || config.namespace === '*'
          ? DEFAULT_SIMULATED_NAMESPACE
          : config.namespace;
    } else {
      const watched = await resolveNamespace(config, facts, context);
      namespace = watched.namespace;
      logger.info(
        { namespace: namespace ?? '*', from: watched.origin },
        `watching ${namespace === undefined ? 'all namespaces' : `namespace ${namespace}`}: ${watched.reason}`,
      );
    }
    leadership = await createLeadership(config, choice, facts, namespace, context, logger);
    sinks = await createSinks(config, choice, namespace, routerApiKey, logger);
    kubernetesEvents = await createKubernetesEvents(config, choice, env, logger);
    workloads = await createWorkloads(config, choice, namespace, logger);
  } catch (err) {
    return usageExit(err);
  }
  const podSource = await createPodSource(config, choice, namespace, logger);
  const service = assembleService({
    flags: config.flags,
    leadership,
    ...(sinks ? { sinks } : {}),
    ...kubernetesEvents,
    ...workloads,
    driftIntervalMs: config.driftIntervalMs,
    sinkMode: config.sinkMode,
    sinkPanicThresholdPercent: config.sinkPanicThresholdPercent,
    podSource,
    sourceKind: choice.kind,
    labels: config.labels,
    portName: config.portName,
    sinkAllowLoopback: config.sinkAllowLoopback,
    prefillPools: new Set(
      config.sglangRouters.filter((t) => t.role === 'prefill').map((t) => t.pool),
    ),
    bootstrapPortAnnotation: config.sglangBootstrapPortAnnotation,
    ...(config.cellReadinessGate && choice.kind === 'kubernetes'
      ? { readinessGate: config.cellReadinessGateCondition }
      : {}),
    resyncPeriodMs: config.resyncPeriodMs,
    adminToken,
    adminAllowedHosts: config.adminAllowedHosts,
    maxEventStreams: config.maxEventStreams,
    logger: logger.child({ component: 'reconcile' }),
    processMetrics: true,
  });
  const app = await buildServer(service, { logger: logger.child({ component: 'http' }) });
  const probes = config.healthProbeListen ? await buildProbeServer(service) : undefined;

  let exitCode = 0;
  let shutdown: Promise<void> | undefined;
  let markStopped: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    markStopped = resolve;
  });
  const stop = (reason: string): Promise<void> => {
    shutdown ??= (async () => {
      logger.info({ reason, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
      const deadline = setTimeout(() => {
        logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; exiting anyway');
        process.exit(1);
      }, config.shutdownTimeoutMs);
      deadline.unref();
      service.beginShutdown();
      service.closeEventStreams();
      // Stop acting at once (a follower takes the Lease over) while reads are still served.
      const stoppedActing = service
        .stopActing()
        .catch((err) => logger.error({ err }, 'stopping leadership failed'));
      if (config.shutdownGraceMs > 0) {
        logger.info(
          { graceMs: config.shutdownGraceMs },
          'serving with readiness failing before the listener closes',
        );
        await realClock.sleep(config.shutdownGraceMs);
      }
      await Promise.all([
        app.close().catch((err) => logger.error({ err }, 'closing the HTTP server failed')),
        probes?.close().catch((err) => logger.error({ err }, 'closing the probe listener failed')),
      ]);
      await stoppedActing;
      await service.stop().catch((err) => logger.error({ err }, 'stopping the service failed'));
      clearTimeout(deadline);
      logger.info('stopped');
      markStopped();
    })();
    return shutdown;
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shutdown) {
      logger.warn({ signal }, 'second signal during shutdown; exiting now');
      process.exit(1);
    }
    void stop(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  let listening = '--listen, POOL_CONTROLLER_LISTEN';
  let address = config.listen;
  try {
    await app.listen({ host: config.listen.host, port: config.listen.port });
    if (probes && config.healthProbeListen) {
      listening = '--health-probe-listen, POOL_CONTROLLER_HEALTH_PROBE_LISTEN';
      address = config.healthProbeListen;
      await probes.listen({ host: address.host, port: address.port });
    }
  } catch (err) {
    // A port in use or an address this host does not have: a configuration error, said in one line.
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? 'the port is in use'
        : code === 'EADDRNOTAVAIL'
          ? 'this host has no such address'
          : code === 'EACCES'
            ? 'permission denied (a port below 1024 needs privileges)'
            : (err as Error).message;
    process.stderr.write(
      `pool-controller: cannot listen on ${address.host}:${address.port} (${listening}): ${why}\n`,
    );
    await app.close().catch(() => {});
    await service.stop();
    return EXIT_USAGE;
  }
  logger.info(
    {
      address: app.server.address(),
      ...(probes ? { healthProbeAddress: probes.server.address() } : {}),
      source: choice.kind,
      namespace: namespace ?? '*',
    },
    'control plane listening',
  );

  try {
    await service.start();
    logger.info(
      { objects: service.storeObjectCount, cells: service.storeParents().length },
      'initial sync done; reconciling',
    );
  } catch (err) {
    if (!shutdown) {
      logger.fatal({ err }, 'the reconcile loop failed to start');
      exitCode = 1;
      await stop('start failed');
    }
  }
  // The listening server keeps the process alive until a signal (or a failed start) stops it.
  await stopped;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  return exitCode;
}

process.exitCode = await main(process.argv.slice(2), process.env);
