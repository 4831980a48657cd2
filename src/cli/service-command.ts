/**
 * The `pool-controller` command (run by ../main.ts): configuration → pod source → service → HTTP
 * control plane, and an orderly shutdown on SIGTERM/SIGINT.
 *
 * Order at start: make the pod source, whose first stream (the first LIST) leaves at once on the
 * reflector's thread the entry started before this module loaded; connect, load and assemble the
 * rest of the service meanwhile; start the loop, which takes that stream over; then build the HTTP
 * server and listen (liveness answers, readiness says "not synced" until the loop's start
 * resolves). Whatever fails once the source is made closes it (the service's `stop()` does, once
 * there is a service). Order at shutdown: fail readiness, stop accepting requests and finish those in
 * flight, stop the loop (the in-flight reconcile is aborted and awaited), stop the source (the
 * reflector's worker thread); all within --shutdown-timeout, else exit anyway.
 *
 * Size: the command's whole sequence (flags, logger, the parts the flags choose, the assembly,
 * HTTP, shutdown), read top to bottom; the parts are connected in service/configured-parts.ts and
 * built, in order, in service/assemble.ts, which calls nothing back here.
 */
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { KubeconfigContext } from '../kubernetes/client/connection.js';
import type { ReflectorThreads } from '../kubernetes/reflector-worker/reflector-threads.js';
import { realClock } from '../runtime/clock.js';
import { buildInfo, versionLine } from '../service/build-info.js';
import {
  type ConfiguredParts,
  clusterOptions,
  connectConfiguredParts,
  createPodSource,
} from '../service/configured-parts.js';
import type { PoolService } from '../service/pool-service.js';
import { DEFAULT_SIMULATED_NAMESPACE } from '../simulated/simulated-source.js';
import {
  type Config,
  ConfigError,
  HelpRequested,
  parseConfig,
  VersionRequested,
} from './config.js';
import { PRETTY_OPTIONS, serviceLoggerOptions } from './log-options.js';
import { loadAdminToken, loadSecretFile } from './secret-file.js';
import {
  chooseSource,
  realHostFacts,
  resolveNamespace,
  type SourceChoice,
} from './source-choice.js';

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

/**
 * Runs the command to its end: its exit code (0, 1 for a failed start, 2 for a usage error).
 * `reflectorThreads`: the reflector's thread, started by the entry before this module loaded
 * (../main.ts); the kubernetes source takes it over, and any other ending closes it.
 */
export async function runServiceCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  reflectorThreads?: ReflectorThreads,
): Promise<number> {
  let unclaimed = reflectorThreads;
  const claim = (): ReflectorThreads | undefined => {
    const threads = unclaimed;
    unclaimed = undefined;
    return threads;
  };
  try {
    return await runCommand(argv, env, claim);
  } finally {
    await unclaimed?.close();
  }
}

async function runCommand(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  claimReflectorThreads: () => ReflectorThreads | undefined,
): Promise<number> {
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
      const { checkClusterConfig } = await import('../kubernetes/client/connection.js');
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
  let parts: ConfiguredParts;
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
  } catch (err) {
    return usageExit(err);
  }
  // The pod source is made now and the kubernetes one opens its first stream at once, as a task
  // for the thread the entry started (createPodSource): the first LIST leaves while the rest of
  // the service (the parts, the assembly, the HTTP server: imported below, not at the top) loads,
  // rather than after it, and the loop's first stream takes it over. From here every failure
  // closes the source, which would otherwise keep the process alive with its thread and its
  // connection. The simulated source runs no reflector: the entry's thread is ended now, not at
  // exit.
  const reflectorThreads = claimReflectorThreads();
  const ownThreads = choice.kind === 'kubernetes' ? reflectorThreads : undefined;
  if (!ownThreads) void reflectorThreads?.close();
  const podSource = await createPodSource(config, choice, namespace, logger, ownThreads);
  try {
    parts = await connectConfiguredParts({
      config,
      choice,
      facts,
      namespace,
      context,
      routerApiKey,
      logger,
    });
  } catch (err) {
    await podSource.close();
    return usageExit(err);
  }
  let service: PoolService;
  try {
    const { assembleService } = await import('../service/assemble.js');
    service = assembleService({
      flags: config.flags,
      ...parts,
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
  } catch (err) {
    await podSource.close();
    throw err;
  }
  // The loop starts now, taking over the stream the source opened when it was made; the HTTP
  // server is loaded and built meanwhile. Liveness answers once it listens, readiness says "not
  // synced" until the start below resolves.
  const starting = service.start();
  starting.catch(() => {});
  let app: FastifyInstance;
  let probes: FastifyInstance | undefined;
  try {
    const [{ buildServer }, { buildProbeServer }] = await Promise.all([
      import('../http/app.js'),
      import('../http/probe-app.js'),
    ]);
    app = await buildServer(service, { logger: logger.child({ component: 'http' }) });
    probes = config.healthProbeListen ? await buildProbeServer(service) : undefined;
  } catch (err) {
    // The service owns the source now: stopping it stops the loop and closes the source.
    await service.stop();
    throw err;
  }

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
    await starting;
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
