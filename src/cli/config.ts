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
import { DEFAULT_BOOTSTRAP_PORT_ANNOTATION } from '../pools/bootstrap-port.js';
import { DEFAULT_CELL_READINESS_GATE_CONDITION } from '../pools/cell-readiness-gate.js';
import {
  DEFAULT_PORT_NAME,
  defaultSelector,
  LWS_LABELS,
  type PoolLabels,
} from '../pools/labels.js';
import { DEFAULT_RESYNC_PERIOD_MS } from '../runtime/reconcile-loop.js';
import { DEFAULT_MAX_EVENT_STREAMS } from '../service/event-stream.js';
import { DEFAULT_STEP_INTERVAL_MS } from '../simulated/simulated-source.js';
import { DEFAULT_SERVICE_SUFFIX } from '../sinks/endpointslice.js';
import {
  DEFAULT_ROUTER_OWNERSHIP,
  ROUTER_OWNERSHIP_MODES,
  type RouterOwnershipMode,
  type SglangRouterTarget,
} from '../sinks/sglang-router.js';
import { DEFAULT_SINK_MODE, SINK_MODES, type SinkMode } from '../sinks/sink.js';
import {
  ALL_NAMESPACES,
  booleanFlag,
  duration,
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

export type { ListenAddress, SglangRouterTarget };
export { ALL_NAMESPACES, MAX_DURATION_MS, parseDuration, parseListen, parseSglangRouterTarget };

/** Prefix of every environment variable the service reads. */
export const ENV_PREFIX = 'POOL_CONTROLLER_';

/**
 * `0.0.0.0:8080`: every interface, so `kubectl port-forward` and a Service both reach it; the
 * port is controller-runtime's metrics-server habit.
 */
export const DEFAULT_LISTEN = '0.0.0.0:8080';

/**
 * 10 s: Kubernetes gives a pod 30 s between SIGTERM and SIGKILL; finishing well inside that leaves
 * room for a slow reconcile and the preStop of whatever runs beside us.
 */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * 3 s: after SIGTERM the replica keeps serving, with `/readyz` failing, this long before its
 * listener closes, so Endpoints, kube-proxy and port-forwards notice it is leaving while its
 * in-flight and newly routed requests still get answers (the Lease is released at once).
 */
export const DEFAULT_SHUTDOWN_GRACE_MS = 3_000;

/**
 * `--max-event-streams` at most: half the server's connection cap (1,024), so streams can never
 * take the connections probes, scrapes and API clients need.
 */
export const MAX_EVENT_STREAMS_LIMIT = 512;

/**
 * `--log-level` values: pino's levels, so the flag's value is handed to the logger as it is; its
 * help and its parser both read this list.
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/**
 * A `--log-level` value. Wider than the reflector worker's message `LogLevel` (protocol.ts), which
 * carries only the four levels the worker logs at.
 */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * `--log-format` values: one JSON object per line for collectors, or pino-pretty for a terminal;
 * its help and its parser both read this list.
 */
export const LOG_FORMATS = ['json', 'pretty'] as const;
/**
 * A `--log-format` value; `Config.logFormat` is `undefined` when none was given, and main picks by
 * whether stdout is a terminal.
 */
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * `--kube-api-content-type` values: kube-controller-manager's flag of that name takes the media
 * types; the short names are accepted too. Protobuf is the default there and here: on a real API
 * server it is several times cheaper to produce and to read than JSON.
 */
export const KUBE_API_CONTENT_TYPES = {
  'application/vnd.kubernetes.protobuf': 'protobuf',
  protobuf: 'protobuf',
  'application/json': 'json',
  json: 'json',
} as const;

/**
 * `--initial-list` values and default: watch-list, as client-go's reflectors since 1.35 — one
 * WATCH served from the API server's watch cache instead of paged LISTs from etcd — falling back
 * to LIST + WATCH by itself on a server that cannot serve it.
 */
export const INITIAL_LIST_VALUES = ['watch-list', 'list'] as const;
/**
 * `--initial-list`'s default (watch-list, see `INITIAL_LIST_VALUES`), named so the help text and
 * the parser's default cannot differ.
 */
export const DEFAULT_INITIAL_LIST_FLAG: (typeof INITIAL_LIST_VALUES)[number] = 'watch-list';

/**
 * The leader-election flags default to the elector's own (client-go's, which kube-controller-manager
 * uses too: 15 s / 10 s / 2 s), defined once in src/coordination/leader-elector.ts.
 */
export {
  DEFAULT_LEASE_DURATION_MS as DEFAULT_LEADER_ELECT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS as DEFAULT_LEADER_ELECT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS as DEFAULT_LEADER_ELECT_RETRY_PERIOD_MS,
};
/** The Lease's default name: one controller per namespace needs no more than the product name. */
export const DEFAULT_LEADER_ELECT_RESOURCE_NAME = 'pool-controller';
/** `--drift-interval`'s default is the coordinator's own (60 s, haptic's). */
/** `--endpointslice-service-suffix`'s default is the sink's own (`-alive`, and why). */
export {
  DEFAULT_DRIFT_INTERVAL_MS,
  DEFAULT_SERVICE_SUFFIX as DEFAULT_ENDPOINTSLICE_SERVICE_SUFFIX,
};

/**
 * The whole parsed configuration: one field per flag (the flag's name in camelCase; `labels` and
 * `leaderElection` gather several), each already validated, defaulted and checked against the
 * others, so main builds the service from it without checking anything again. `--help` and
 * docs/service.md describe each flag.
 */
export interface Config {
  /** `undefined`: decide at start (see source-choice.ts). */
  source: SourceKind | undefined;
  kubeconfig: string | undefined;
  context: string | undefined;
  /** The encoding asked for on pod LIST and WATCH (JSON is always accepted too). */
  kubeApiContentType: 'protobuf' | 'json';
  /** Ask for gzip on pod LISTs. */
  kubeApiCompression: boolean;
  /** How the whole world is read: watch-list (falling back by itself) or LIST + WATCH. */
  initialList: (typeof INITIAL_LIST_VALUES)[number];
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
}

/**
 * The `--leader-elect*` flags. The three durations are checked here as the elector checks them
 * (lease > renew deadline > 1.2 × retry period), so a combination that could never work exits 2 at
 * start, naming the flags.
 */
export interface LeaderElectionConfig {
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

// ----- the flag table -----

interface FlagSpec {
  /** The flag without dashes; also the environment variable's stem. */
  flag: string;
  /** The Config key it fills. */
  key: keyof RawConfig;
  valueName: string;
  description: string;
  /** Shown in --help and used when neither flag nor variable is set. */
  defaultText?: string;
  /**
   * `boolean`: `--flag` alone means true, `--flag=true|false` sets it (pflag's rule: a bare
   * boolean never takes the next argument). `multiple`: the flag may be repeated; its variable
   * holds a comma-separated list. Default: one string value.
   */
  kind?: 'boolean' | 'multiple';
}

type RawConfig = Record<
  | 'source'
  | 'kubeconfig'
  | 'context'
  | 'kubeApiContentType'
  | 'kubeApiCompression'
  | 'initialList'
  | 'namespace'
  | 'selector'
  | 'poolLabel'
  | 'cellIndexLabel'
  | 'workerIndexLabel'
  | 'cellSizeAnnotation'
  | 'portName'
  | 'listen'
  | 'healthProbeListen'
  | 'adminTokenFile'
  | 'adminAllowedHosts'
  | 'maxEventStreams'
  | 'resyncPeriod'
  | 'logLevel'
  | 'shutdownTimeout'
  | 'shutdownGrace'
  | 'simulationStep'
  | 'logFormat'
  | 'leaderElect'
  | 'leaderElectResourceName'
  | 'leaderElectResourceNamespace'
  | 'leaderElectLeaseDuration'
  | 'leaderElectRenewDeadline'
  | 'leaderElectRetryPeriod'
  | 'driftInterval'
  | 'sglangRouter'
  | 'sglangBootstrapPortAnnotation'
  | 'sglangRouterApiKeyFile'
  | 'publishEndpointslices'
  | 'endpointsliceServiceSuffix'
  | 'cellReadinessGate'
  | 'cellReadinessGateCondition'
  | 'events'
  | 'sglangRouterOwnership'
  | 'sinkAllowLoopback'
  | 'sinkMode'
  | 'sinkPanicThreshold',
  string | string[] | undefined
>;

/** Every flag, in --help order. */
export const FLAGS: readonly FlagSpec[] = [
  {
    flag: 'source',
    key: 'source',
    valueName: 'kubernetes|simulated',
    description:
      'Where pods come from. Default: kubernetes when running in a cluster or when a kubeconfig exists, otherwise simulated (announced at start and shown in every status response).',
  },
  {
    flag: 'kubeconfig',
    key: 'kubeconfig',
    valueName: 'PATH',
    description:
      'Kubeconfig file for --source kubernetes. Default: $KUBECONFIG, then ~/.kube/config.',
  },
  {
    flag: 'context',
    key: 'context',
    valueName: 'NAME',
    description: "Kubeconfig context to use. Default: the kubeconfig's current context.",
  },
  {
    flag: 'kube-api-content-type',
    key: 'kubeApiContentType',
    valueName: 'application/vnd.kubernetes.protobuf|application/json',
    description:
      "Encoding to ask the API server for on pod LIST and WATCH, as kube-controller-manager's flag of that name ('protobuf' and 'json' also accepted). JSON is accepted in either case, for servers that do not speak protobuf.",
    defaultText: 'application/vnd.kubernetes.protobuf',
  },
  {
    flag: 'kube-api-compression',
    key: 'kubeApiCompression',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Ask the API server to gzip pod LIST pages. Off by default: next to the API server the bytes are cheap and gzip is not (it costs the API server CPU per page, and this process as much to inflate); turn it on across a slow link (kubectl's --disable-compression is the same switch, inverted).",
    defaultText: 'false',
  },
  {
    flag: 'initial-list',
    key: 'initialList',
    valueName: INITIAL_LIST_VALUES.join('|'),
    description:
      "How the first sync and every relist read the pods: 'watch-list' is one WATCH that sends the current pods and goes on as the watch (client-go's default since 1.35; served from the API server's watch cache), falling back to LIST + WATCH by itself when the server cannot serve it (logged once, shown in /api/v1/reflector); 'list' is a paged LIST, then a WATCH.",
    defaultText: DEFAULT_INITIAL_LIST_FLAG,
  },
  {
    flag: 'namespace',
    key: 'namespace',
    valueName: 'NAME',
    description:
      "Namespace to watch; '*' for all. Default, as kubectl's: the kubeconfig context's namespace when it names one, the pod's own namespace in a cluster, else 'default' (also for the simulation). The start-up log says which and why.",
  },
  {
    flag: 'selector',
    key: 'selector',
    valueName: 'SELECTOR',
    description:
      'Label selector for the pods to watch, in Kubernetes syntax (app=engine,tier in (a,b),!canary); checked at start.',
    defaultText: 'the pool label exists',
  },
  {
    flag: 'pool-label',
    key: 'poolLabel',
    valueName: 'KEY',
    description: 'Pod label naming the pool.',
    defaultText: LWS_LABELS.pool,
  },
  {
    flag: 'cell-index-label',
    key: 'cellIndexLabel',
    valueName: 'KEY',
    description: "Pod label holding the cell's index in its pool.",
    defaultText: LWS_LABELS.cellIndex,
  },
  {
    flag: 'worker-index-label',
    key: 'workerIndexLabel',
    valueName: 'KEY',
    description: "Pod label holding the pod's index in its cell (absent: 0, the leader).",
    defaultText: LWS_LABELS.workerIndex,
  },
  {
    flag: 'cell-size-annotation',
    key: 'cellSizeAnnotation',
    valueName: 'KEY',
    description: 'Pod annotation holding how many pods a complete cell has.',
    defaultText: LWS_LABELS.cellSize,
  },
  {
    flag: 'port-name',
    key: 'portName',
    valueName: 'NAME',
    description: "Name of the leader's container port that forms a cell's address.",
    defaultText: DEFAULT_PORT_NAME,
  },
  {
    flag: 'listen',
    key: 'listen',
    valueName: 'HOST:PORT',
    description: 'Address of the HTTP control plane (API, health, metrics).',
    defaultText: DEFAULT_LISTEN,
  },
  {
    flag: 'health-probe-listen',
    key: 'healthProbeListen',
    valueName: 'HOST:PORT',
    description:
      "Also serve /healthz and /readyz on this address, alone, as controller-runtime's --health-probe-bind-address does: no API client or event stream can take the probes' connections there. '0' or 'off': only on --listen.",
    defaultText: 'off',
  },
  {
    flag: 'admin-token-file',
    key: 'adminTokenFile',
    valueName: 'PATH',
    description:
      'File holding the bearer token the POST endpoints require. Without it, POSTs are accepted from loopback clients only.',
  },
  {
    flag: 'admin-allowed-hosts',
    key: 'adminAllowedHosts',
    valueName: 'HOST',
    kind: 'multiple',
    description:
      'Without --admin-token-file, a POST must name a loopback host (localhost, 127.0.0.1, [::1]) in its Host header, so a web page reached through DNS rebinding cannot post; these host names (no port) are accepted too. Repeatable; the variable takes a comma-separated list.',
  },
  {
    flag: 'max-event-streams',
    key: 'maxEventStreams',
    valueName: 'N',
    description:
      "Most GET /api/v1/events streams open at once; beyond, 503 with Retry-After. Kept well below the server's 1,024 connections, so streams can never starve probes, scrapes and the API.",
    defaultText: String(DEFAULT_MAX_EVENT_STREAMS),
  },
  {
    flag: 'resync-period',
    key: 'resyncPeriod',
    valueName: 'DURATION',
    description:
      "How often every cell is reconciled again regardless of events; '0' or 'off' disables.",
    defaultText: '10h',
  },
  {
    flag: 'log-level',
    key: 'logLevel',
    valueName: LOG_LEVELS.join('|'),
    description: 'Minimum level of the JSON log lines on stdout.',
    defaultText: 'info',
  },
  {
    flag: 'log-format',
    key: 'logFormat',
    valueName: LOG_FORMATS.join('|'),
    description:
      'Log line format: pretty (human-readable, pino-pretty) or json (one JSON object per line, for log collectors).',
    defaultText: 'pretty when stdout is a terminal, else json',
  },
  {
    flag: 'leader-elect',
    key: 'leaderElect',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      'Campaign for a Lease so that only one replica acts (runs the coordinator and its sinks); every replica serves reads. With the simulated source there is no Lease: the process leads.',
    defaultText: 'true with --source kubernetes',
  },
  {
    flag: 'leader-elect-resource-name',
    key: 'leaderElectResourceName',
    valueName: 'NAME',
    description: 'Name of the Lease (coordination.k8s.io/v1) the replicas campaign for.',
    defaultText: DEFAULT_LEADER_ELECT_RESOURCE_NAME,
  },
  {
    flag: 'leader-elect-resource-namespace',
    key: 'leaderElectResourceNamespace',
    valueName: 'NAME',
    description:
      "Namespace of the Lease. Default: the pod's own namespace in a cluster, else the watched namespace, else the kubeconfig context's namespace (with --namespace '*'), else 'default'.",
  },
  {
    flag: 'leader-elect-lease-duration',
    key: 'leaderElectLeaseDuration',
    valueName: 'DURATION',
    description:
      'How long followers wait, after last seeing the Lease change, before they may take it over.',
    defaultText: '15s',
  },
  {
    flag: 'leader-elect-renew-deadline',
    key: 'leaderElectRenewDeadline',
    valueName: 'DURATION',
    description:
      'How long the leader keeps trying to renew before it stops acting; must be shorter than the lease duration.',
    defaultText: '10s',
  },
  {
    flag: 'leader-elect-retry-period',
    key: 'leaderElectRetryPeriod',
    valueName: 'DURATION',
    description:
      'Time between attempts to acquire or renew the Lease; the renew deadline must exceed 1.2 × this.',
    defaultText: '2s',
  },
  {
    flag: 'drift-interval',
    key: 'driftInterval',
    valueName: 'DURATION',
    description:
      "How long after the last reconciliation the leader deploys the desired state again, repairing targets that drifted (a restarted router, a lost call); '0' or 'off' disables.",
    defaultText: '60s',
  },
  {
    flag: 'sglang-router',
    key: 'sglangRouter',
    valueName: 'POOL=URL[,role=prefill|decode]',
    kind: 'multiple',
    description:
      "Keep this SGLang router's worker list equal to the alive cells of POOL (http://<cell address>): it adds the missing and removes the extra it owns (see --sglang-router-ownership). With role=prefill or role=decode (a router started with --pd-disaggregation) POOL's cells are its prefill workers (with their bootstrap port) or decode workers, and that router may serve one prefill and one decode pool. Repeatable; the variable takes a comma-separated list.",
  },
  {
    flag: 'sglang-bootstrap-port-annotation',
    key: 'sglangBootstrapPortAnnotation',
    valueName: 'KEY',
    description:
      "Leader pod annotation holding a prefill cell's bootstrap port (1-65535), registered with its prefill router worker; a prefill cell without a valid one is not routable (NoBootstrapPort).",
    defaultText: DEFAULT_BOOTSTRAP_PORT_ANNOTATION,
  },
  {
    flag: 'sglang-router-api-key-file',
    key: 'sglangRouterApiKeyFile',
    valueName: 'PATH',
    description: "File holding the routers' API key, sent as 'Authorization: Bearer <key>'.",
  },
  {
    flag: 'publish-endpointslices',
    key: 'publishEndpointslices',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Publish each pool's alive cells as EndpointSlices for a selector-less Service named <pool><suffix> (needs RBAC on endpointslices).",
    defaultText: 'false',
  },
  {
    flag: 'endpointslice-service-suffix',
    key: 'endpointsliceServiceSuffix',
    valueName: 'SUFFIX',
    description:
      "Appended to a pool's name to name the Service its EndpointSlices belong to (never the pool's own name, which LeaderWorkerSet's headless Service uses).",
    defaultText: DEFAULT_SERVICE_SUFFIX,
  },
  {
    flag: 'cell-readiness-gate',
    key: 'cellReadinessGate',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Write the cell-alive condition (--cell-readiness-gate-condition) on every watched pod that names it in spec.readinessGates: True while the pod's cell is alive and routable, False with the why-not otherwise, so the pod's own Ready (kubectl, Services, InferencePools) waits for its whole cell. Such pods are judged by ContainersReady instead of Ready. The leader writes, by server-side apply on pods/status (needs RBAC: deploy/readiness-gate, or the chart's readinessGate.enabled).",
    defaultText: 'false',
  },
  {
    flag: 'cell-readiness-gate-condition',
    key: 'cellReadinessGateCondition',
    valueName: 'TYPE',
    description:
      'The pod condition type of the cell readiness gate: what pods name in spec.readinessGates[].conditionType.',
    defaultText: DEFAULT_CELL_READINESS_GATE_CONDITION,
  },
  {
    flag: 'events',
    key: 'events',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Record Kubernetes Events (events.k8s.io/v1): CellAlive and CellNotAlive on a cell's leader pod, SinkFailed and SinkRecovered on this controller's own pod (POD_NAME, POD_NAMESPACE). The leader records; repeats become a series, each object is rate-limited and the queue is bounded.",
    defaultText: 'true with --source kubernetes',
  },
  {
    flag: 'sink-allow-loopback',
    key: 'sinkAllowLoopback',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      'Route to cells whose address is loopback (engines and routers on one host: a laptop, a test). Off, such a cell is alive but not routable (AddressInvalid), as the API server refuses it in an EndpointSlice; link-local and unspecified addresses are refused either way.',
    defaultText: 'false',
  },
  {
    flag: 'sink-mode',
    key: 'sinkMode',
    valueName: SINK_MODES.join('|'),
    description:
      "'observe' is a dry run: every sink reads its targets, computes what it would add and remove, and reports it (GET /api/v1/sinks wouldAdd/wouldRemove, sink.observed events, pool_controller_sink_workers, one log line per change) without ever writing to a router or an EndpointSlice. Readiness and leader election are as in 'apply'.",
    defaultText: DEFAULT_SINK_MODE,
  },
  {
    flag: 'sink-panic-threshold',
    key: 'sinkPanicThreshold',
    valueName: 'PERCENT',
    description:
      "Envoy's panic threshold: while fewer than PERCENT of a pool's known cells are alive and routable, its sinks remove nothing they list (they still add), and the pool is reported in panic until the share is back at or above PERCENT. 0 turns it off.",
    defaultText: '0',
  },
  {
    flag: 'sglang-router-ownership',
    key: 'sglangRouterOwnership',
    valueName: ROUTER_OWNERSHIP_MODES.join('|'),
    description:
      "Which router workers the sink may remove. 'managed': only those it added (it marks them with the label app.kubernetes.io/managed-by=pool-controller), so hand-added workers and other tools' stay; 'all': every worker that is not an alive cell of the pool.",
    defaultText: DEFAULT_ROUTER_OWNERSHIP,
  },
  {
    flag: 'shutdown-timeout',
    key: 'shutdownTimeout',
    valueName: 'DURATION',
    description:
      'Longest an orderly shutdown on SIGTERM/SIGINT may take before the process exits anyway.',
    defaultText: '10s',
  },
  {
    flag: 'shutdown-grace',
    key: 'shutdownGrace',
    valueName: 'DURATION',
    description:
      "After SIGTERM, keep serving (with /readyz failing) this long before closing the listener, so endpoints and port-forwards notice first; '0' skips it. Must be shorter than --shutdown-timeout.",
    defaultText: '3s',
  },
  {
    flag: 'simulation-step',
    key: 'simulationStep',
    valueName: 'DURATION',
    description: 'Time between two steps of the simulated story (--source simulated only).',
    defaultText: `${DEFAULT_STEP_INTERVAL_MS / 1000}s`,
  },
];

/** `pool-label` → `POOL_CONTROLLER_POOL_LABEL`. */
export function envName(flag: string): string {
  return `${ENV_PREFIX}${flag.toUpperCase().replaceAll('-', '_')}`;
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
  initialList: z
    .enum(INITIAL_LIST_VALUES, {
      error: (issue) =>
        `expected ${INITIAL_LIST_VALUES.join(' or ')}, got ${JSON.stringify(String(issue.input).slice(0, 80))}`,
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
});

/** The usage text for `--help`, built from the flag table so it cannot fall behind. */
export function helpText(): string {
  const lines = [
    'Usage: pool-controller [flags]',
    '',
    'Watches pods, groups them into cells and pools, and serves their state over HTTP.',
    `Every flag can also be set through the environment variable shown (${ENV_PREFIX}<FLAG>); a flag wins over its variable.`,
    '',
    'Flags:',
  ];
  for (const spec of FLAGS) {
    lines.push(`  --${spec.flag}${spec.kind === 'boolean' ? '' : ' '}${spec.valueName}`);
    lines.push(`      ${spec.description}`);
    lines.push(
      `      env: ${envName(spec.flag)}${spec.defaultText ? `   default: ${spec.defaultText}` : ''}`,
    );
  }
  lines.push('  --help', '      Print this text and exit.');
  lines.push(
    '  --version',
    '      Print the version, the source revision and the Node.js version, and exit.',
  );
  return `${lines.join('\n')}\n`;
}

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
  for (const spec of FLAGS) {
    const fromFlag = values[spec.flag];
    const fromEnv = env[envName(spec.flag)];
    if (spec.kind === 'multiple') {
      const items = Array.isArray(fromFlag) ? fromFlag : fromEnv !== undefined ? [fromEnv] : [];
      if (items.length > 0) raw[spec.key] = items;
      continue;
    }
    const value = typeof fromFlag === 'string' ? fromFlag : fromEnv;
    if (value !== undefined) raw[spec.key] = value;
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
    source: r.source,
    kubeconfig: r.kubeconfig,
    context: r.context,
    kubeApiContentType: r.kubeApiContentType,
    kubeApiCompression: r.kubeApiCompression ?? false,
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
