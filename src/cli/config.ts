/**
 * The configuration: flags and `POOL_CONTROLLER_*` variables merged (a flag wins over its
 * variable), each value parsed (flag-values.ts) and defaulted from the flag table
 * (flag-table.ts), then checked against the others, so a configuration that can never work fails
 * at start with an error naming the flag.
 *
 * Size: merging flags and variables, the schema each value passes, and the cross-flag checks: one
 * pass from input to Config.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DEFAULT_DRIFT_INTERVAL_MS } from '../coordination/coordinator.js';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  LEADER_ELECTION_JITTER_FACTOR,
} from '../coordination/leader-elector.js';
import { labelKeyProblem } from '../kubernetes/resources/label-selector.js';
import { SOURCE_KINDS, type SourceKind } from '../model/pod-source.js';
import { INITIAL_LIST_MODES, type InitialListMode } from '../model/pod-source-stats.js';
import { DEFAULT_BOOTSTRAP_PORT_ANNOTATION } from '../pools/bootstrap-port.js';
import { DEFAULT_CELL_READINESS_GATE_CONDITION } from '../pools/cell-readiness-gate.js';
import {
  DEFAULT_PORT_NAME,
  defaultSelector,
  LWS_LABELS,
  type PoolLabels,
} from '../pools/labels.js';
import { DEFAULT_RESYNC_PERIOD_MS } from '../runtime/reconcile-loop.js';
import type { EffectiveFlag, FlagOrigin } from '../service/control-plane.js';
import { DEFAULT_MAX_EVENT_STREAMS } from '../service/event-stream.js';
import { DEFAULT_STEP_INTERVAL_MS } from '../simulated/simulated-source.js';
import { DEFAULT_SERVICE_SUFFIX } from '../sinks/endpointslice.js';
import type { EppEndpointsFileTarget } from '../sinks/epp-endpoints-file.js';
import {
  DEFAULT_ROUTER_OWNERSHIP,
  ROUTER_OWNERSHIP_MODES,
  type RouterOwnershipMode,
  type SglangRouterTarget,
} from '../sinks/sglang-router.js';
import { DEFAULT_SINK_MODE, SINK_MODES, type SinkMode } from '../sinks/sink.js';
import {
  DEFAULT_INITIAL_LIST_FLAG,
  DEFAULT_LEADER_ELECT_RESOURCE_NAME,
  DEFAULT_LISTEN,
  DEFAULT_SHUTDOWN_GRACE_MS,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  envName,
  FLAGS,
  helpText,
  KUBE_API_CONTENT_TYPES,
  LOG_FORMATS,
  LOG_LEVELS,
  type LogFormat,
  type LogLevel,
  MAX_EVENT_STREAMS_LIMIT,
  type RawConfig,
} from './flag-table.js';
import {
  ALL_NAMESPACES,
  booleanFlag,
  duration,
  eppEndpointsFiles,
  type ListenAddress,
  labelKey,
  labelSelector,
  listen,
  MAX_DURATION_MS,
  namespace,
  nonEmpty,
  optionalPeriod,
  parseDuration,
  parseListen,
  parseSglangRouterTarget,
  portName,
  resourceName,
  resyncPeriod,
  serviceSuffix,
  sglangRouters,
} from './flag-values.js';

export * from './flag-table.js';
export type { ListenAddress, SglangRouterTarget };
export { ALL_NAMESPACES, MAX_DURATION_MS, parseDuration, parseListen, parseSglangRouterTarget };

/**
 * The whole parsed configuration: one field per flag (the flag's name in camelCase; `labels` and
 * `leaderElection` gather several), each already validated, defaulted and checked against the
 * others, so main builds the service from it without checking anything again. `--help` and
 * docs/service.md describe each flag.
 */
export interface Config {
  /** Every flag's value and where it came from, for `GET /flagz` (secrets withheld). */
  flags: EffectiveFlag[];
  /** `undefined`: decide at start (see source-choice.ts). */
  source: SourceKind | undefined;
  kubeconfig: string | undefined;
  context: string | undefined;
  /** The encoding asked for on pod LIST and WATCH (JSON is always accepted too). */
  kubeApiContentType: 'protobuf' | 'json';
  /** Ask for gzip on pod LISTs. */
  kubeApiCompression: boolean;
  /** Read pod LISTs and watches over HTTP/2 when the server offers it. */
  kubeApiHttp2: boolean;
  /** How the whole world is read: watch-list (falling back by itself) or LIST + WATCH. */
  initialList: InitialListMode;
  /** `undefined`: the default rule (own namespace in a cluster, all outside); `'*'`: all. */
  namespace: string | undefined;
  selector: string;
  labels: PoolLabels;
  portName: string;
  listen: ListenAddress;
  /** Where `/healthz` and `/readyz` are served on their own too; `undefined`: nowhere else. */
  healthProbeListen: ListenAddress | undefined;
  adminTokenFile: string | undefined;
  /** Host names (lowercase, no port) a loopback-only POST may name besides loopback ones. */
  adminAllowedHosts: string[];
  /** `null`: resync off. */
  resyncPeriodMs: number | null;
  /** Open `GET /api/v1/events` streams at most; beyond, 503. */
  maxEventStreams: number;
  logLevel: LogLevel;
  shutdownTimeoutMs: number;
  /** Serving with readiness failing, after SIGTERM and before the listener closes. */
  shutdownGraceMs: number;
  simulationStepMs: number;
  /** `undefined`: pretty on a terminal, JSON otherwise (decided by main, which sees stdout). */
  logFormat: LogFormat | undefined;
  leaderElection: LeaderElectionConfig;
  /** Time between drift runs of the coordinator; `null`: none. */
  driftIntervalMs: number | null;
  /** `--sglang-router POOL=URL[,role=prefill|decode]`, in the order given. */
  sglangRouters: SglangRouterTarget[];
  /** `--epp-endpoints-file POOL=PATH[,role=prefill|decode]`, in the order given. */
  eppEndpointsFiles: EppEndpointsFileTarget[];
  /** The leader annotation holding a prefill cell's bootstrap port. */
  sglangBootstrapPortAnnotation: string;
  sglangRouterApiKeyFile: string | undefined;
  publishEndpointSlices: boolean;
  endpointSliceServiceSuffix: string;
  /** Loopback cell addresses are routable (`--sink-allow-loopback`). */
  sinkAllowLoopback: boolean;
  /** `--sink-mode`: `observe` never writes to a target. */
  sinkMode: SinkMode;
  /** `--sink-panic-threshold`, 0–100; 0: off. */
  sinkPanicThresholdPercent: number;
  /** `--sglang-router-ownership`: which router workers the sink may remove. */
  sglangRouterOwnership: RouterOwnershipMode;
  /** `--cell-readiness-gate`: the leader writes the gate's condition on gated pods. */
  cellReadinessGate: boolean;
  /** The condition type pods name in `spec.readinessGates`. */
  cellReadinessGateCondition: string;
  /** `--events`; `undefined`: on with the kubernetes source, off with the simulated one. */
  events: boolean | undefined;
  /**
   * `--watch-leaderworkersets`; `undefined`: on with the kubernetes source (the simulated one has
   * no cluster to watch).
   */
  watchLeaderWorkerSets: boolean | undefined;
}

/**
 * The `--leader-elect*` flags. The three durations are checked here as the elector checks them
 * (lease > renew deadline > 1.2 × retry period), so a combination that could never work exits 2 at
 * start, naming the flags.
 */
interface LeaderElectionConfig {
  /** `undefined`: on with the kubernetes source, off (the process leads alone) with the simulated one. */
  enabled: boolean | undefined;
  resourceName: string;
  /** `undefined`: the pod's own namespace in a cluster, else the watched namespace, else `default`. */
  resourceNamespace: string | undefined;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** A configuration problem, one line, naming the flag and its variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Thrown for `--help`: not an error, but main must print help and exit 0 instead of starting. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
}

/** Thrown for `--version`: main prints the version line and exits 0 instead of starting. */
export class VersionRequested extends Error {
  override readonly name = 'VersionRequested';
}

const rawSchema = z.object({
  source: z
    .enum(SOURCE_KINDS, {
      error: (issue) => `expected kubernetes or simulated, got ${JSON.stringify(issue.input)}`,
    })
    .optional(),
  kubeconfig: nonEmpty('a file path').optional(),
  context: nonEmpty('a context name').optional(),
  kubeApiContentType: z
    .string()
    .transform((value, context) => {
      const known =
        KUBE_API_CONTENT_TYPES[value.trim().toLowerCase() as keyof typeof KUBE_API_CONTENT_TYPES];
      if (known) return known;
      context.addIssue({
        code: 'custom',
        message: `expected application/vnd.kubernetes.protobuf or application/json, got ${JSON.stringify(value.slice(0, 80))}`,
      });
      return z.NEVER;
    })
    .default('protobuf'),
  kubeApiCompression: booleanFlag.optional(),
  kubeApiHttp2: booleanFlag.optional(),
  initialList: z
    .enum(INITIAL_LIST_MODES, {
      error: (issue) =>
        `expected ${INITIAL_LIST_MODES.join(' or ')}, got ${JSON.stringify(String(issue.input).slice(0, 80))}`,
    })
    .default(DEFAULT_INITIAL_LIST_FLAG),
  namespace: namespace.optional(),
  selector: labelSelector.optional(),
  poolLabel: labelKey.default(LWS_LABELS.pool),
  cellIndexLabel: labelKey.default(LWS_LABELS.cellIndex),
  workerIndexLabel: labelKey.default(LWS_LABELS.workerIndex),
  cellSizeAnnotation: labelKey.default(LWS_LABELS.cellSize),
  portName: portName.default(DEFAULT_PORT_NAME),
  listen: listen.default(() => parseListen(DEFAULT_LISTEN)!),
  healthProbeListen: z
    .string()
    .transform((text, ctx) => {
      if (text === '0' || text === 'off' || text === '') return undefined;
      const address = parseListen(text);
      if (!address) {
        ctx.addIssue({
          code: 'custom',
          message: `expected host:port (e.g. 0.0.0.0:8081) or 0/off, got ${JSON.stringify(text.slice(0, 80))}`,
        });
        return z.NEVER;
      }
      return address;
    })
    .optional(),
  adminTokenFile: nonEmpty('a file path').optional(),
  adminAllowedHosts: z
    .array(z.string())
    .transform((items, ctx) => {
      const hosts = items
        .flatMap((i) => i.split(','))
        .map((i) => i.trim().toLowerCase())
        .filter(Boolean);
      const bad = hosts.find((h) => h.length > 253 || !/^[a-z0-9.:-]+$/.test(h));
      if (bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `expected host names or addresses without a port (e.g. ctl.example.internal), got ${JSON.stringify(bad.slice(0, 80))}`,
        });
        return z.NEVER;
      }
      return hosts;
    })
    .default([]),
  resyncPeriod: resyncPeriod.default(DEFAULT_RESYNC_PERIOD_MS),
  maxEventStreams: z
    .string()
    .transform((text, ctx) => {
      const n = /^[0-9]{1,4}$/.test(text) ? Number(text) : Number.NaN;
      if (!(n >= 1 && n <= MAX_EVENT_STREAMS_LIMIT)) {
        ctx.addIssue({
          code: 'custom',
          message: `expected a whole number from 1 to ${MAX_EVENT_STREAMS_LIMIT} (fewer than the server's connections), got ${JSON.stringify(text.slice(0, 80))}`,
        });
        return z.NEVER;
      }
      return n;
    })
    .default(DEFAULT_MAX_EVENT_STREAMS),
  logLevel: z
    .enum(LOG_LEVELS, {
      error: (issue) =>
        `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(issue.input)}`,
    })
    .default('info'),
  shutdownTimeout: duration('duration').default(DEFAULT_SHUTDOWN_TIMEOUT_MS),
  shutdownGrace: optionalPeriod('3s')
    .transform((ms) => ms ?? 0)
    .default(DEFAULT_SHUTDOWN_GRACE_MS),
  simulationStep: duration('duration').default(DEFAULT_STEP_INTERVAL_MS),
  logFormat: z
    .enum(LOG_FORMATS, {
      error: (issue) => `expected json or pretty, got ${JSON.stringify(issue.input)}`,
    })
    .optional(),
  leaderElect: booleanFlag.optional(),
  leaderElectResourceName: resourceName.default(DEFAULT_LEADER_ELECT_RESOURCE_NAME),
  leaderElectResourceNamespace: namespace
    .refine((v) => v !== ALL_NAMESPACES, { error: 'a Lease lives in one namespace, not in *' })
    .optional(),
  leaderElectLeaseDuration: duration('duration').default(DEFAULT_LEASE_DURATION_MS),
  leaderElectRenewDeadline: duration('duration').default(DEFAULT_RENEW_DEADLINE_MS),
  leaderElectRetryPeriod: duration('duration').default(DEFAULT_RETRY_PERIOD_MS),
  driftInterval: optionalPeriod('30s or 5m').default(DEFAULT_DRIFT_INTERVAL_MS),
  sglangRouter: sglangRouters.default([]),
  eppEndpointsFile: eppEndpointsFiles.default([]),
  sglangBootstrapPortAnnotation: labelKey.default(DEFAULT_BOOTSTRAP_PORT_ANNOTATION),
  sglangRouterApiKeyFile: nonEmpty('a file path').optional(),
  publishEndpointslices: booleanFlag.default(false),
  endpointsliceServiceSuffix: serviceSuffix.default(DEFAULT_SERVICE_SUFFIX),
  sinkAllowLoopback: booleanFlag.default(false),
  sinkMode: z
    .enum(SINK_MODES as [SinkMode, ...SinkMode[]], {
      error: (issue) =>
        `expected ${SINK_MODES.join(' or ')}, got ${JSON.stringify(String(issue.input).slice(0, 80))}`,
    })
    .default(DEFAULT_SINK_MODE),
  sinkPanicThreshold: z
    .string()
    .transform((text, ctx) => {
      const trimmed = text.trim().replace(/%$/, '');
      const n = /^\d{1,3}(?:\.\d+)?$/.test(trimmed) ? Number(trimmed) : Number.NaN;
      if (!(n >= 0 && n <= 100)) {
        ctx.addIssue({
          code: 'custom',
          message: `expected a percentage from 0 to 100 (0: off), got ${JSON.stringify(text.slice(0, 80))}`,
        });
        return z.NEVER;
      }
      return n;
    })
    .default(0),
  sglangRouterOwnership: z
    .enum(ROUTER_OWNERSHIP_MODES as [RouterOwnershipMode, ...RouterOwnershipMode[]], {
      error: (issue) =>
        `expected ${ROUTER_OWNERSHIP_MODES.join(' or ')}, got ${JSON.stringify(String(issue.input).slice(0, 80))}`,
    })
    .default(DEFAULT_ROUTER_OWNERSHIP),
  cellReadinessGate: booleanFlag.default(false),
  cellReadinessGateCondition: z
    .string()
    // A prefix is required: the unprefixed types (Ready, ContainersReady, ...) are the kubelet's,
    // and writing one of those would fight the kubelet over its own verdict.
    .refine((v) => v.includes('/') && labelKeyProblem(v) === undefined, {
      error: (issue) =>
        `expected a domain-prefixed condition type such as example.com/cell-alive (a qualified name, as spec.readinessGates requires; unprefixed types are the kubelet's), got ${JSON.stringify(String(issue.input).slice(0, 80))}`,
    })
    .default(DEFAULT_CELL_READINESS_GATE_CONDITION),
  events: booleanFlag.optional(),
  watchLeaderworkersets: booleanFlag.optional(),
});

/** What `/flagz` shows for a secret flag that was set: that it was, not its value. */
export const WITHHELD = '(withheld)';

/**
 * Reads flags and environment into a validated `Config`. Pure: no file is touched (see
 * `loadAdminToken`). Throws `ConfigError` naming the flag, `HelpRequested` or `VersionRequested`.
 */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Config {
  let values: Record<string, string | string[] | boolean | undefined>;
  const booleans = new Set(FLAGS.filter((s) => s.kind === 'boolean').map((s) => `--${s.flag}`));
  try {
    ({ values } = parseArgs({
      // A bare boolean flag means true; `--flag=false` arrives as a string value.
      args: argv.map((arg) => (booleans.has(arg) ? `${arg}=true` : arg)),
      options: {
        ...Object.fromEntries(
          FLAGS.map((spec) => [
            spec.flag,
            { type: 'string' as const, multiple: spec.kind === 'multiple' },
          ]),
        ),
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ConfigError(`${(err as Error).message.split('\n')[0]} (see --help)`);
  }
  if (values.help) throw new HelpRequested(helpText());
  if (values.version) throw new VersionRequested('--version');

  const raw: Partial<RawConfig> = {};
  const flags: EffectiveFlag[] = [];
  for (const spec of FLAGS) {
    const fromFlag = values[spec.flag];
    const fromEnv = env[envName(spec.flag)];
    const given = (value: string | string[], from: FlagOrigin): void => {
      raw[spec.key] = value;
      flags.push({
        flag: spec.flag,
        env: envName(spec.flag),
        value: spec.secret ? WITHHELD : value,
        from,
      });
    };
    if (spec.kind === 'multiple') {
      if (Array.isArray(fromFlag) && fromFlag.length > 0) given(fromFlag, 'flag');
      else if (fromEnv !== undefined) given([fromEnv], 'environment');
    } else if (typeof fromFlag === 'string') given(fromFlag, 'flag');
    else if (fromEnv !== undefined) given(fromEnv, 'environment');
    if (raw[spec.key] === undefined) {
      flags.push({
        flag: spec.flag,
        env: envName(spec.flag),
        value: spec.defaultText ?? null,
        from: 'default',
      });
    }
  }
  const result = rawSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const spec = FLAGS.find((s) => s.key === issue.path[0]);
    const name = spec ? `--${spec.flag} (${envName(spec.flag)})` : String(issue.path[0]);
    throw new ConfigError(`invalid ${name}: ${issue.message}`);
  }
  const r = result.data;
  const labels: PoolLabels = {
    pool: r.poolLabel,
    cellIndex: r.cellIndexLabel,
    workerIndex: r.workerIndexLabel,
    cellSize: r.cellSizeAnnotation,
  };
  const leaderElection: LeaderElectionConfig = {
    enabled: r.leaderElect,
    resourceName: r.leaderElectResourceName,
    resourceNamespace: r.leaderElectResourceNamespace,
    leaseDurationMs: r.leaderElectLeaseDuration,
    renewDeadlineMs: r.leaderElectRenewDeadline,
    retryPeriodMs: r.leaderElectRetryPeriod,
  };
  checkLeaderElectionTimings(leaderElection);
  if (
    r.healthProbeListen !== undefined &&
    r.healthProbeListen.port !== 0 &&
    r.healthProbeListen.port === r.listen.port
  ) {
    throw new ConfigError(
      `invalid --health-probe-listen (${envName('health-probe-listen')}): port ${r.healthProbeListen.port} is --listen's (${envName('listen')}); the probes need a port of their own`,
    );
  }
  if (r.shutdownGrace >= r.shutdownTimeout) {
    throw new ConfigError(
      `invalid --shutdown-grace (${envName('shutdown-grace')}): ${r.shutdownGrace} ms must be shorter than --shutdown-timeout (${envName('shutdown-timeout')}, ${r.shutdownTimeout} ms)`,
    );
  }
  return {
    flags,
    source: r.source,
    kubeconfig: r.kubeconfig,
    context: r.context,
    kubeApiContentType: r.kubeApiContentType,
    kubeApiCompression: r.kubeApiCompression ?? false,
    kubeApiHttp2: r.kubeApiHttp2 ?? true,
    initialList: r.initialList,
    namespace: r.namespace,
    selector: r.selector ?? defaultSelector(labels),
    labels,
    portName: r.portName,
    listen: r.listen,
    healthProbeListen: r.healthProbeListen,
    adminTokenFile: r.adminTokenFile,
    adminAllowedHosts: r.adminAllowedHosts,
    resyncPeriodMs: r.resyncPeriod,
    maxEventStreams: r.maxEventStreams,
    logLevel: r.logLevel,
    shutdownTimeoutMs: r.shutdownTimeout,
    shutdownGraceMs: r.shutdownGrace,
    simulationStepMs: r.simulationStep,
    logFormat: r.logFormat,
    leaderElection,
    driftIntervalMs: r.driftInterval,
    sglangRouters: r.sglangRouter,
    eppEndpointsFiles: r.eppEndpointsFile,
    sglangBootstrapPortAnnotation: r.sglangBootstrapPortAnnotation,
    sglangRouterApiKeyFile: r.sglangRouterApiKeyFile,
    publishEndpointSlices: r.publishEndpointslices,
    endpointSliceServiceSuffix: r.endpointsliceServiceSuffix,
    sinkAllowLoopback: r.sinkAllowLoopback,
    sinkMode: r.sinkMode,
    sinkPanicThresholdPercent: r.sinkPanicThreshold,
    sglangRouterOwnership: r.sglangRouterOwnership,
    cellReadinessGate: r.cellReadinessGate,
    cellReadinessGateCondition: r.cellReadinessGateCondition,
    events: r.events,
    watchLeaderWorkerSets: r.watchLeaderworkersets,
  };
}

/**
 * client-go's (and `LeaderElector`'s) rules, checked here so a bad combination exits 2 naming the
 * flags instead of failing later: the leader must give up before a follower may take over, and
 * must get more than one retry within its deadline.
 */
function checkLeaderElectionTimings(config: LeaderElectionConfig): void {
  const flag = (name: string): string => `--${name} (${envName(name)})`;
  if (config.leaseDurationMs <= config.renewDeadlineMs) {
    throw new ConfigError(
      `invalid ${flag('leader-elect-lease-duration')}: ${config.leaseDurationMs} ms must be longer than ${flag('leader-elect-renew-deadline')} (${config.renewDeadlineMs} ms)`,
    );
  }
  if (config.renewDeadlineMs <= LEADER_ELECTION_JITTER_FACTOR * config.retryPeriodMs) {
    throw new ConfigError(
      `invalid ${flag('leader-elect-renew-deadline')}: ${config.renewDeadlineMs} ms must be longer than ${LEADER_ELECTION_JITTER_FACTOR} × ${flag('leader-elect-retry-period')} (${config.retryPeriodMs} ms)`,
    );
  }
}
