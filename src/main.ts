#!/usr/bin/env node
/**
 * The `pool-controller` command: configuration → pod source → service → HTTP control plane, and
 * an orderly shutdown on SIGTERM/SIGINT.
 *
 * Order at start: listen first (liveness answers at once, readiness says "not synced"), then
 * start the loop. Order at shutdown: fail readiness, stop accepting requests and finish those in
 * flight, stop the loop (the in-flight reconcile is aborted and awaited), stop the source (the
 * reflector's worker thread); all within --shutdown-timeout, else exit anyway.
 */
import { pino } from 'pino';
import {
  type Config,
  ConfigError,
  HelpRequested,
  loadAdminToken,
  parseConfig,
} from './cli/config.js';
import {
  chooseSource,
  realHostFacts,
  resolveNamespace,
  type SourceChoice,
} from './cli/source-choice.js';
import { buildServer } from './http/app.js';
import type { PodSource } from './pools/pod-source.js';
import { DEFAULT_SIMULATED_NAMESPACE, SimulatedPodSource } from './pools/simulated-source.js';
import { PoolService } from './service/pool-service.js';

/** Exit code for a configuration error: distinct from a crash (1), as `kubectl` and Go flag parsing use 2. */
const EXIT_USAGE = 2;

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
    ...(config.kubeconfig !== undefined ? { kubeconfigPath: config.kubeconfig } : {}),
    ...(config.context !== undefined ? { context: config.context } : {}),
    logger: logger.child({ component: 'reflector' }),
  });
}

async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let config: Config;
  let adminToken: string | undefined;
  let choice: SourceChoice;
  const facts = { ...realHostFacts(), env };
  try {
    config = parseConfig(argv, env);
    adminToken = config.adminTokenFile ? await loadAdminToken(config.adminTokenFile) : undefined;
    choice = chooseSource(config, facts);
  } catch (err) {
    if (err instanceof HelpRequested) {
      process.stdout.write(err.message);
      return 0;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`pool-controller: ${err.message}\n`);
      return EXIT_USAGE;
    }
    throw err;
  }

  const logger = pino({ name: 'pool-controller', level: config.logLevel });
  if (choice.kind === 'simulated') {
    process.stderr.write(`${simulatedBanner(choice)}\n`);
    logger.warn(
      { source: 'simulated', reason: choice.reason },
      'SIMULATED SOURCE: serving a made-up world, not a cluster',
    );
  } else {
    logger.info({ source: 'kubernetes', reason: choice.reason }, 'watching a Kubernetes cluster');
  }
  const namespace =
    choice.kind === 'simulated'
      ? config.namespace === undefined || config.namespace === '*'
        ? DEFAULT_SIMULATED_NAMESPACE
        : config.namespace
      : await resolveNamespace(config, facts);
  const podSource = await createPodSource(config, choice, namespace, logger);
  const service = new PoolService({
    podSource,
    sourceKind: choice.kind,
    labels: config.labels,
    portName: config.portName,
    resyncPeriodMs: config.resyncPeriodMs,
    adminToken,
    logger: logger.child({ component: 'reconcile' }),
    processMetrics: true,
  });
  const app = await buildServer(service, { logger: logger.child({ component: 'http' }) });

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
      await app.close().catch((err) => logger.error({ err }, 'closing the HTTP server failed'));
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

  try {
    await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    logger.fatal({ err, listen: config.listen }, 'cannot listen');
    await service.stop();
    return 1;
  }
  logger.info(
    { address: app.server.address(), source: choice.kind, namespace: namespace ?? '*' },
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
