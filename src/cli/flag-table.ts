/**
 * The flag table: every flag with its variable, value name, description and default, the
 * defaults themselves, and the `--help` text built from them. One table, so help and parsing
 * cannot disagree about which flags exist; defaults are named constants (or the owning module's,
 * re-exported), so help shows what the code uses.
 *
 * Size: one table of every flag, one entry each, so help, parsing and docs read one list.
 */
import { DEFAULT_DRIFT_INTERVAL_MS } from '../coordination/coordinator.js';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
} from '../coordination/leader-elector.js';
import { INITIAL_LIST_MODES, type InitialListMode } from '../model/pod-source-stats.js';
import { DEFAULT_BOOTSTRAP_PORT_ANNOTATION } from '../pools/bootstrap-port.js';
import { DEFAULT_CELL_READINESS_GATE_CONDITION } from '../pools/cell-readiness-gate.js';
import { DEFAULT_PORT_NAME, LWS_LABELS } from '../pools/labels.js';
import { DEFAULT_MAX_EVENT_STREAMS } from '../service/event-stream.js';
import { DEFAULT_STEP_INTERVAL_MS } from '../simulated/simulated-source.js';
import { DEFAULT_SERVICE_SUFFIX } from '../sinks/endpointslice.js';
import { DEFAULT_ROUTER_OWNERSHIP, ROUTER_OWNERSHIP_MODES } from '../sinks/sglang-router.js';
import { DEFAULT_SINK_MODE, SINK_MODES } from '../sinks/sink.js';

/** Prefix of every environment variable the service reads. */
const ENV_PREFIX = 'POOL_CONTROLLER_';

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
 * `--initial-list`'s default: watch-list, as client-go's reflectors since 1.35 — one WATCH served
 * from the API server's watch cache instead of paged LISTs from etcd — falling back to LIST +
 * WATCH by itself on a server that cannot serve it. Named so the help text and the parser's
 * default cannot differ; its values are the model's `INITIAL_LIST_MODES`.
 */
export const DEFAULT_INITIAL_LIST_FLAG: InitialListMode = 'watch-list';

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
 * The concerns `--help` groups the flags by, in order, with their headings: an operator looks
 * for "the router flags" or "the listener flags", not through one list of forty.
 */
export const FLAG_GROUPS = {
  source: 'Source: where pods come from and how they form cells',
  http: 'HTTP: the listeners, their clients and shutdown',
  leadership: 'Leadership and the coordinator',
  sinks: 'Sinks: SGLang routers, EPP endpoints files, EndpointSlices, the readiness gate',
  logging: 'Logging and Kubernetes Events',
} as const;
/** A `FLAG_GROUPS` key. */
type FlagGroup = keyof typeof FLAG_GROUPS;

/** One flag: its name, the Config key it fills, its help line and its default. */
export interface FlagSpec {
  /** The flag without dashes; also the environment variable's stem. */
  flag: string;
  /** The Config key it fills. */
  key: keyof RawConfig;
  /** Which part of the service it configures: its heading in `--help`. */
  group: FlagGroup;
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
  /**
   * Its value names where a secret is (a token or key file, a kubeconfig with credentials):
   * `GET /flagz` says it was set, never what to.
   */
  secret?: true;
}

/** The raw value of every flag, by Config key: what the table fills and the schema parses. */
export type RawConfig = Record<
  | 'source'
  | 'kubeconfig'
  | 'context'
  | 'kubeApiContentType'
  | 'kubeApiCompression'
  | 'kubeApiHttp2'
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
  | 'eppEndpointsFile'
  | 'sglangBootstrapPortAnnotation'
  | 'sglangRouterApiKeyFile'
  | 'publishEndpointslices'
  | 'endpointsliceServiceSuffix'
  | 'cellReadinessGate'
  | 'cellReadinessGateCondition'
  | 'events'
  | 'watchLeaderworkersets'
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
    group: 'source',
    key: 'source',
    valueName: 'kubernetes|simulated',
    description: 'Where pods come from (announced at start and shown in every status response).',
    defaultText: 'kubernetes in a cluster or when a kubeconfig exists, else simulated',
  },
  {
    flag: 'kubeconfig',
    group: 'source',
    secret: true,
    key: 'kubeconfig',
    valueName: 'PATH',
    description: 'Kubeconfig file for --source kubernetes.',
    defaultText: '$KUBECONFIG, then ~/.kube/config',
  },
  {
    flag: 'context',
    group: 'source',
    key: 'context',
    valueName: 'NAME',
    description: 'Kubeconfig context to use.',
    defaultText: "the kubeconfig's current context",
  },
  {
    flag: 'kube-api-content-type',
    group: 'source',
    key: 'kubeApiContentType',
    valueName: 'application/vnd.kubernetes.protobuf|application/json',
    description:
      "Encoding to ask the API server for on pod LIST and WATCH, as kube-controller-manager's flag of that name ('protobuf' and 'json' also accepted). JSON is accepted in either case, for servers that do not speak protobuf.",
    defaultText: 'application/vnd.kubernetes.protobuf',
  },
  {
    flag: 'kube-api-compression',
    group: 'source',
    key: 'kubeApiCompression',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Ask the API server to gzip what reads the whole world: pod LIST pages and the watch-list (inflated as it streams; a WATCH from a cursor never asks). Off unless asked: next to the API server the bytes are cheap and gzip is not (it costs the API server CPU per page, and this process as much to inflate); turn it on across a slow link (kubectl's --disable-compression is the same switch, inverted).",
    defaultText: 'false',
  },
  {
    flag: 'kube-api-http2',
    group: 'source',
    key: 'kubeApiHttp2',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Read pod LIST pages and watches over HTTP/2 when the API server offers it (TLS, no proxy; one connection carries them all, as client-go's transport does). A server or proxy that speaks only HTTP/1.1 is read over HTTP/1.1 either way; false keeps to HTTP/1.1 (client-go's DISABLE_HTTP2). Measured against kube-apiserver: the initial sync 10-14 % faster at 10,000 and 50,000 pods.",
    defaultText: 'true',
  },
  {
    flag: 'initial-list',
    group: 'source',
    key: 'initialList',
    valueName: INITIAL_LIST_MODES.join('|'),
    description:
      "How the first sync and every relist read the pods: 'watch-list' is one WATCH that sends the current pods and goes on as the watch (client-go's default since 1.35; served from the API server's watch cache), falling back to LIST + WATCH by itself when the server cannot serve it (logged once, shown in /api/v1/reflector); 'list' is a paged LIST, then a WATCH.",
    defaultText: DEFAULT_INITIAL_LIST_FLAG,
  },
  {
    flag: 'namespace',
    group: 'source',
    key: 'namespace',
    valueName: 'NAME',
    description: "Namespace to watch; '*' for all. The start-up log says which and why.",
    defaultText:
      "as kubectl's: the kubeconfig context's namespace when it names one, the pod's own namespace in a cluster, else 'default' (also for the simulation)",
  },
  {
    flag: 'selector',
    group: 'source',
    key: 'selector',
    valueName: 'SELECTOR',
    description:
      'Label selector for the pods to watch, in Kubernetes syntax (app=engine,tier in (a,b),!canary); checked at start.',
    defaultText: 'the pool label exists',
  },
  {
    flag: 'pool-label',
    group: 'source',
    key: 'poolLabel',
    valueName: 'KEY',
    description: 'Pod label naming the pool.',
    defaultText: LWS_LABELS.pool,
  },
  {
    flag: 'cell-index-label',
    group: 'source',
    key: 'cellIndexLabel',
    valueName: 'KEY',
    description: "Pod label holding the cell's index in its pool.",
    defaultText: LWS_LABELS.cellIndex,
  },
  {
    flag: 'worker-index-label',
    group: 'source',
    key: 'workerIndexLabel',
    valueName: 'KEY',
    description: "Pod label holding the pod's index in its cell (absent: 0, the leader).",
    defaultText: LWS_LABELS.workerIndex,
  },
  {
    flag: 'cell-size-annotation',
    group: 'source',
    key: 'cellSizeAnnotation',
    valueName: 'KEY',
    description: 'Pod annotation holding how many pods a complete cell has.',
    defaultText: LWS_LABELS.cellSize,
  },
  {
    flag: 'port-name',
    group: 'source',
    key: 'portName',
    valueName: 'NAME',
    description: "Name of the leader's container port that forms a cell's address.",
    defaultText: DEFAULT_PORT_NAME,
  },
  {
    flag: 'listen',
    group: 'http',
    key: 'listen',
    valueName: 'HOST:PORT',
    description: 'Address of the HTTP control plane (API, health, metrics).',
    defaultText: DEFAULT_LISTEN,
  },
  {
    flag: 'health-probe-listen',
    group: 'http',
    key: 'healthProbeListen',
    valueName: 'HOST:PORT',
    description:
      "Also serve /healthz and /readyz on this address, alone, as controller-runtime's --health-probe-bind-address does: no API client or event stream can take the probes' connections there. '0' or 'off': only on --listen.",
    defaultText: 'off',
  },
  {
    flag: 'admin-token-file',
    group: 'http',
    secret: true,
    key: 'adminTokenFile',
    valueName: 'PATH',
    description:
      'File holding the bearer token the POST endpoints require. Without it, POSTs are accepted from loopback clients only.',
  },
  {
    flag: 'admin-allowed-hosts',
    group: 'http',
    key: 'adminAllowedHosts',
    valueName: 'HOST',
    kind: 'multiple',
    description:
      'Without --admin-token-file, a POST must name a loopback host (localhost, 127.0.0.1, [::1]) in its Host header, so a web page reached through DNS rebinding cannot post; these host names (no port) are accepted too. Repeatable; the variable takes a comma-separated list.',
  },
  {
    flag: 'max-event-streams',
    group: 'http',
    key: 'maxEventStreams',
    valueName: 'N',
    description:
      "Most GET /api/v1/events streams open at once; beyond, 503 with Retry-After. Kept well below the server's 1,024 connections, so streams can never starve probes, scrapes and the API.",
    defaultText: String(DEFAULT_MAX_EVENT_STREAMS),
  },
  {
    flag: 'resync-period',
    group: 'source',
    key: 'resyncPeriod',
    valueName: 'DURATION',
    description:
      "How often every cell is reconciled again regardless of events; '0' or 'off' disables.",
    defaultText: '10h',
  },
  {
    flag: 'log-level',
    group: 'logging',
    key: 'logLevel',
    valueName: LOG_LEVELS.join('|'),
    description: 'Minimum level of the JSON log lines on stdout.',
    defaultText: 'info',
  },
  {
    flag: 'log-format',
    group: 'logging',
    key: 'logFormat',
    valueName: LOG_FORMATS.join('|'),
    description:
      'Log line format: pretty (human-readable, pino-pretty) or json (one JSON object per line, for log collectors).',
    defaultText: 'pretty when stdout is a terminal, else json',
  },
  {
    flag: 'leader-elect',
    group: 'leadership',
    key: 'leaderElect',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      'Campaign for a Lease so that only one replica acts (runs the coordinator and its sinks); every replica serves reads. With the simulated source there is no Lease: the process leads.',
    defaultText: 'true with --source kubernetes',
  },
  {
    flag: 'leader-elect-resource-name',
    group: 'leadership',
    key: 'leaderElectResourceName',
    valueName: 'NAME',
    description: 'Name of the Lease (coordination.k8s.io/v1) the replicas campaign for.',
    defaultText: DEFAULT_LEADER_ELECT_RESOURCE_NAME,
  },
  {
    flag: 'leader-elect-resource-namespace',
    group: 'leadership',
    key: 'leaderElectResourceNamespace',
    valueName: 'NAME',
    description: 'Namespace of the Lease.',
    defaultText:
      "the pod's own namespace in a cluster ($POD_NAMESPACE, else the service account's), else the watched namespace, else the kubeconfig context's namespace (with --namespace '*'), else 'default'",
  },
  {
    flag: 'leader-elect-lease-duration',
    group: 'leadership',
    key: 'leaderElectLeaseDuration',
    valueName: 'DURATION',
    description:
      'How long followers wait, after last seeing the Lease change, before they may take it over.',
    defaultText: '15s',
  },
  {
    flag: 'leader-elect-renew-deadline',
    group: 'leadership',
    key: 'leaderElectRenewDeadline',
    valueName: 'DURATION',
    description:
      'How long the leader keeps trying to renew before it stops acting; must be shorter than the lease duration.',
    defaultText: '10s',
  },
  {
    flag: 'leader-elect-retry-period',
    group: 'leadership',
    key: 'leaderElectRetryPeriod',
    valueName: 'DURATION',
    description:
      'Time between attempts to acquire or renew the Lease; the renew deadline must exceed 1.2 × this.',
    defaultText: '2s',
  },
  {
    flag: 'drift-interval',
    group: 'leadership',
    key: 'driftInterval',
    valueName: 'DURATION',
    description:
      "How long after the last reconciliation the leader deploys the desired state again, repairing targets that drifted (a restarted router, a lost call); '0' or 'off' disables.",
    defaultText: '60s',
  },
  {
    flag: 'sglang-router',
    group: 'sinks',
    key: 'sglangRouter',
    valueName: 'POOL=URL[,role=prefill|decode]',
    kind: 'multiple',
    description:
      "Keep this SGLang router's worker list equal to the alive cells of POOL (http://<cell address>): it adds the missing and removes the extra it owns (see --sglang-router-ownership). With role=prefill or role=decode (a router started with --pd-disaggregation) POOL's cells are its prefill workers (with their bootstrap port) or decode workers, and that router may serve one prefill and one decode pool. Repeatable; the variable takes a comma-separated list.",
  },
  {
    flag: 'epp-endpoints-file',
    group: 'sinks',
    key: 'eppEndpointsFile',
    valueName: 'POOL=PATH[,role=prefill|decode]',
    kind: 'multiple',
    description:
      "Keep this file, in the format of llm-d's endpoint picker file-discovery plugin (endpoints: [{name, namespace, address, port, labels}]), equal to the alive, routable cells of POOL: one entry per cell's leader, written atomically (a temporary file renamed over it) and only on change, at most 1 MiB, IPv4 only (an IPv6 cell is left out and named in lastError). PATH is absolute, in a directory shared with the EPP; with role=prefill or role=decode each entry is labelled llm-d.ai/role. Repeatable; the variable takes a comma-separated list.",
  },
  {
    flag: 'sglang-bootstrap-port-annotation',
    group: 'sinks',
    key: 'sglangBootstrapPortAnnotation',
    valueName: 'KEY',
    description:
      "Leader pod annotation holding a prefill cell's bootstrap port (1-65535), registered with its prefill router worker; a prefill cell without a valid one is not routable (NoBootstrapPort).",
    defaultText: DEFAULT_BOOTSTRAP_PORT_ANNOTATION,
  },
  {
    flag: 'sglang-router-api-key-file',
    group: 'sinks',
    secret: true,
    key: 'sglangRouterApiKeyFile',
    valueName: 'PATH',
    description: "File holding the routers' API key, sent as 'Authorization: Bearer <key>'.",
  },
  {
    flag: 'publish-endpointslices',
    group: 'sinks',
    key: 'publishEndpointslices',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Publish each pool's alive cells as EndpointSlices for a selector-less Service named <pool><suffix> (needs RBAC on endpointslices).",
    defaultText: 'false',
  },
  {
    flag: 'endpointslice-service-suffix',
    group: 'sinks',
    key: 'endpointsliceServiceSuffix',
    valueName: 'SUFFIX',
    description:
      "Appended to a pool's name to name the Service its EndpointSlices belong to (never the pool's own name, which LeaderWorkerSet's headless Service uses).",
    defaultText: DEFAULT_SERVICE_SUFFIX,
  },
  {
    flag: 'cell-readiness-gate',
    group: 'sinks',
    key: 'cellReadinessGate',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Write the cell-alive condition (--cell-readiness-gate-condition) on every watched pod that names it in spec.readinessGates: True while the pod's cell is alive and routable, False with the why-not otherwise, so the pod's own Ready (kubectl, Services, InferencePools) waits for its whole cell. Such pods are judged by ContainersReady instead of Ready. The leader writes, by server-side apply on pods/status (needs RBAC: deploy/readiness-gate, or the chart's readinessGate.enabled).",
    defaultText: 'false',
  },
  {
    flag: 'cell-readiness-gate-condition',
    group: 'sinks',
    key: 'cellReadinessGateCondition',
    valueName: 'TYPE',
    description:
      'The pod condition type of the cell readiness gate: what pods name in spec.readinessGates[].conditionType.',
    defaultText: DEFAULT_CELL_READINESS_GATE_CONDITION,
  },
  {
    flag: 'events',
    group: 'logging',
    key: 'events',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Record Kubernetes Events (events.k8s.io/v1): CellAlive and CellNotAlive on a cell's leader pod; SinkFailed, SinkRecovered, PoolPanicEntered and PoolPanicExited on this controller's own pod (POD_NAME, POD_NAMESPACE); PoolDegraded, PoolEmpty and PoolRecovered on a pool's LeaderWorkerSet. The leader records; repeats become a series, each object is rate-limited and the queue is bounded.",
    defaultText: 'true with --source kubernetes',
  },
  {
    flag: 'watch-leaderworkersets',
    group: 'source',
    key: 'watchLeaderworkersets',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      "Watch the LeaderWorkerSets of the watched namespace(s) and judge each pool against the one of its name: desiredCells (spec.replicas), missingCells, capacity Full/Degraded/Empty/Unknown in GET /api/v1/pools, a NoPods placeholder in GET /api/v1/cells for each desired cell with no pod. Needs get/list/watch on leaderworkersets.leaderworkerset.x-k8s.io; without it (or without the CRD) the controller runs on, says why once, every pool's capacity is Unknown, and it asks again each minute.",
    defaultText: 'true with --source kubernetes',
  },
  {
    flag: 'sink-allow-loopback',
    group: 'sinks',
    key: 'sinkAllowLoopback',
    valueName: '[=true|false]',
    kind: 'boolean',
    description:
      'Route to cells whose address is loopback (engines and routers on one host: a laptop, a test). Off, such a cell is alive but not routable (AddressInvalid), as the API server refuses it in an EndpointSlice; link-local and unspecified addresses are refused either way.',
    defaultText: 'false',
  },
  {
    flag: 'sink-mode',
    group: 'sinks',
    key: 'sinkMode',
    valueName: SINK_MODES.join('|'),
    description:
      "'observe' is a dry run: every sink reads its targets, computes what it would add and remove, and reports it (GET /api/v1/sinks wouldAdd/wouldRemove, sink.observed events, pool_controller_sink_workers, one log line per change) without ever writing to a router, an EPP endpoints file, an EndpointSlice or a pod condition; Kubernetes Events are still recorded. Readiness and leader election are as in 'apply'.",
    defaultText: DEFAULT_SINK_MODE,
  },
  {
    flag: 'sink-panic-threshold',
    group: 'sinks',
    key: 'sinkPanicThreshold',
    valueName: 'PERCENT',
    description:
      "Envoy's panic threshold: while fewer than PERCENT of a pool's known cells are alive and routable, its sinks remove nothing they list (they still add), and the pool is reported in panic until the share is back at or above PERCENT. 0 turns it off.",
    defaultText: '0',
  },
  {
    flag: 'sglang-router-ownership',
    group: 'sinks',
    key: 'sglangRouterOwnership',
    valueName: ROUTER_OWNERSHIP_MODES.join('|'),
    description:
      "Which router workers the sink may remove. 'managed': only those it added (it marks them with the label app.kubernetes.io/managed-by=pool-controller), so hand-added workers and other tools' stay; 'all': every worker that is not an alive cell of the pool.",
    defaultText: DEFAULT_ROUTER_OWNERSHIP,
  },
  {
    flag: 'shutdown-timeout',
    group: 'http',
    key: 'shutdownTimeout',
    valueName: 'DURATION',
    description:
      'Longest an orderly shutdown on SIGTERM/SIGINT may take before the process exits anyway.',
    defaultText: '10s',
  },
  {
    flag: 'shutdown-grace',
    group: 'http',
    key: 'shutdownGrace',
    valueName: 'DURATION',
    description:
      "After SIGTERM, keep serving (with /readyz failing) this long before closing the listener, so endpoints and port-forwards notice first; '0' skips it. Must be shorter than --shutdown-timeout.",
    defaultText: '3s',
  },
  {
    flag: 'simulation-step',
    group: 'source',
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

/** The usage text for `--help`, built from the flag table so it cannot fall behind. */
export function helpText(): string {
  const lines = [
    'Usage: pool-controller [flags]',
    '',
    'Watches pods, groups them into cells and pools, and serves their state over HTTP.',
    `Every flag can also be set through the environment variable shown (${ENV_PREFIX}<FLAG>); a flag wins over its variable.`,
    '',
  ];
  for (const [group, heading] of Object.entries(FLAG_GROUPS)) {
    lines.push(`${heading}:`);
    for (const spec of FLAGS.filter((s) => s.group === group)) {
      lines.push(`  --${spec.flag}${spec.kind === 'boolean' ? '' : ' '}${spec.valueName}`);
      lines.push(`      ${spec.description}`);
      // Every default in one place and one form: after the variable, as `default: …`.
      lines.push(`      env: ${envName(spec.flag)}   default: ${spec.defaultText ?? 'none'}`);
    }
    lines.push('');
  }
  lines.push('Other:');
  lines.push('  --help', '      Print this text and exit.');
  lines.push(
    '  --version',
    '      Print the version, the source revision and the Node.js version, and exit.',
  );
  return `${lines.join('\n')}\n`;
}
