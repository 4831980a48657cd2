/**
 * The service's configuration: command-line flags, each mirrored by an environment variable
 * (`--pool-label` ⇄ `POOL_CONTROLLER_POOL_LABEL`), validated with zod at start.
 *
 * Flags win over the environment, the environment over defaults. Container images and Helm charts
 * set environment variables; people at a terminal type flags; both reach every setting. A bad
 * value stops the process before anything starts, with a message naming the flag and its variable.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  LabelSelectorError,
  labelKeyProblem,
  parseLabelSelector,
} from '../kubernetes/label-selector.js';
import {
  DEFAULT_PORT_NAME,
  defaultSelector,
  LWS_LABELS,
  type PoolLabels,
} from '../pools/labels.js';
import type { SourceKind } from '../pools/pod-source.js';
import { DEFAULT_STEP_INTERVAL_MS } from '../pools/simulated-source.js';
import { DEFAULT_RESYNC_PERIOD_MS } from '../runtime/reconcile-loop.js';

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

/** Means "watch all namespaces" as a `--namespace` value. */
export const ALL_NAMESPACES = '*';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ListenAddress {
  host: string;
  port: number;
}

export interface Config {
  /** `undefined`: decide at start (see source-choice.ts). */
  source: SourceKind | undefined;
  kubeconfig: string | undefined;
  context: string | undefined;
  /** `undefined`: the default rule (own namespace in a cluster, all outside); `'*'`: all. */
  namespace: string | undefined;
  selector: string;
  labels: PoolLabels;
  portName: string;
  listen: ListenAddress;
  adminTokenFile: string | undefined;
  /** `null`: resync off. */
  resyncPeriodMs: number | null;
  logLevel: LogLevel;
  shutdownTimeoutMs: number;
  simulationStepMs: number;
}

/** A configuration problem, one line, naming the flag and its variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Thrown for `--help`: not an error, but main must print help and exit 0 instead of starting. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
}

// ----- value schemas -----

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|h|m|s))+$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Parses Go-style durations (`500ms`, `90s`, `10m`, `1h30m`) into milliseconds. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, value, unit] of text.matchAll(DURATION_PART)) {
    total += Number(value) * UNIT_MS[unit!]!;
  }
  return total;
}

const duration = (what: string) =>
  z.string().transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a positive ${what} such as 500ms, 30s, 10m or 1h30m, got ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }
    return ms;
  });

const resyncPeriod = z.string().transform((text, ctx) => {
  if (text === '0' || text === 'off') return null;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration such as 30m or 10h, or 0/off to disable, got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  return ms;
});

/** Parses `host:port`, `[v6]:port` or `:port`. */
export function parseListen(text: string): ListenAddress | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65_535) return undefined;
  const host = match[1] ?? (match[2] || '0.0.0.0');
  return { host, port };
}

const listen = z.string().transform((text, ctx) => {
  const address = parseListen(text);
  if (!address) {
    ctx.addIssue({
      code: 'custom',
      message: `expected host:port (e.g. 0.0.0.0:8080, 127.0.0.1:9000, [::]:8080), got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  return address;
});

/** Kubernetes' qualified name: an optional DNS-subdomain prefix, `/`, and a ≤63-char name. */
const labelKey = z.string().refine((v) => labelKeyProblem(v) === undefined, {
  error: (issue) =>
    `expected a Kubernetes label key such as example.com/name, got ${JSON.stringify(issue.input)}`,
});

/**
 * A selector the API server would accept (see label-selector.ts). Checked here because the API
 * server only says no at the first LIST, and then says it again on every relist, forever.
 */
const labelSelector = z
  .string()
  .trim()
  .min(1, { error: 'expected a label selector, got an empty value' })
  .superRefine((text, ctx) => {
    try {
      parseLabelSelector(text);
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      ctx.addIssue({
        code: 'custom',
        message: `expected a label selector such as app=engine,tier in (a,b),!canary; ${JSON.stringify(text)} is not one: ${err.message}`,
      });
    }
  });

/** RFC 1123 label, as Kubernetes requires of namespace names. */
const namespace = z
  .string()
  .refine((v) => v === ALL_NAMESPACES || /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/.test(v), {
    error: (issue) =>
      `expected a namespace name (lowercase letters, digits, '-') or '*' for all namespaces, got ${JSON.stringify(issue.input)}`,
  });

/** IANA service name, what Kubernetes allows as a container port name. */
const portName = z
  .string()
  .refine((v) => /^(?=.*[a-z])[a-z0-9](?:-?[a-z0-9])*$/.test(v) && v.length <= 15, {
    error: (issue) =>
      `expected a container port name (≤15 lowercase letters, digits and single '-'), got ${JSON.stringify(issue.input)}`,
  });

const nonEmpty = (what: string) =>
  z
    .string()
    .trim()
    .min(1, { error: `expected ${what}, got an empty value` });

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
}

type RawConfig = Record<
  | 'source'
  | 'kubeconfig'
  | 'context'
  | 'namespace'
  | 'selector'
  | 'poolLabel'
  | 'cellIndexLabel'
  | 'workerIndexLabel'
  | 'cellSizeAnnotation'
  | 'portName'
  | 'listen'
  | 'adminTokenFile'
  | 'resyncPeriod'
  | 'logLevel'
  | 'shutdownTimeout'
  | 'simulationStep',
  string | undefined
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
    flag: 'namespace',
    key: 'namespace',
    valueName: 'NAME',
    description:
      "Namespace to watch; '*' for all. Default: the pod's own namespace in a cluster, all namespaces outside one ('default' for the simulation).",
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
    flag: 'admin-token-file',
    key: 'adminTokenFile',
    valueName: 'PATH',
    description:
      'File holding the bearer token the POST endpoints require. Without it, POSTs are accepted from loopback clients only.',
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
    flag: 'shutdown-timeout',
    key: 'shutdownTimeout',
    valueName: 'DURATION',
    description:
      'Longest an orderly shutdown on SIGTERM/SIGINT may take before the process exits anyway.',
    defaultText: '10s',
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
    .enum(['kubernetes', 'simulated'], {
      error: (issue) => `expected kubernetes or simulated, got ${JSON.stringify(issue.input)}`,
    })
    .optional(),
  kubeconfig: nonEmpty('a file path').optional(),
  context: nonEmpty('a context name').optional(),
  namespace: namespace.optional(),
  selector: labelSelector.optional(),
  poolLabel: labelKey.default(LWS_LABELS.pool),
  cellIndexLabel: labelKey.default(LWS_LABELS.cellIndex),
  workerIndexLabel: labelKey.default(LWS_LABELS.workerIndex),
  cellSizeAnnotation: labelKey.default(LWS_LABELS.cellSize),
  portName: portName.default(DEFAULT_PORT_NAME),
  listen: listen.default(() => parseListen(DEFAULT_LISTEN)!),
  adminTokenFile: nonEmpty('a file path').optional(),
  resyncPeriod: resyncPeriod.default(DEFAULT_RESYNC_PERIOD_MS),
  logLevel: z
    .enum(LOG_LEVELS, {
      error: (issue) =>
        `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(issue.input)}`,
    })
    .default('info'),
  shutdownTimeout: duration('duration').default(DEFAULT_SHUTDOWN_TIMEOUT_MS),
  simulationStep: duration('duration').default(DEFAULT_STEP_INTERVAL_MS),
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
    lines.push(`  --${spec.flag} ${spec.valueName}`);
    lines.push(`      ${spec.description}`);
    lines.push(
      `      env: ${envName(spec.flag)}${spec.defaultText ? `   default: ${spec.defaultText}` : ''}`,
    );
  }
  lines.push('  --help', '      Print this text and exit.');
  return `${lines.join('\n')}\n`;
}

/**
 * Reads flags and environment into a validated `Config`. Pure: no file is touched (see
 * `loadAdminToken`). Throws `ConfigError` naming the flag, or `HelpRequested`.
 */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Config {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        ...Object.fromEntries(FLAGS.map((spec) => [spec.flag, { type: 'string' as const }])),
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ConfigError(`${(err as Error).message.split('\n')[0]} (see --help)`);
  }
  if (values.help) throw new HelpRequested(helpText());

  const raw: Partial<RawConfig> = {};
  for (const spec of FLAGS) {
    const fromFlag = values[spec.flag];
    const value = typeof fromFlag === 'string' ? fromFlag : env[envName(spec.flag)];
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
  return {
    source: r.source,
    kubeconfig: r.kubeconfig,
    context: r.context,
    namespace: r.namespace,
    selector: r.selector ?? defaultSelector(labels),
    labels,
    portName: r.portName,
    listen: r.listen,
    adminTokenFile: r.adminTokenFile,
    resyncPeriodMs: r.resyncPeriod,
    logLevel: r.logLevel,
    shutdownTimeoutMs: r.shutdownTimeout,
    simulationStepMs: r.simulationStep,
  };
}

/**
 * Reads the admin token. Surrounding whitespace is trimmed (a Secret written with `echo` ends in a
 * newline); an unreadable or empty file is a start-up error naming the flag, never "no auth".
 */
export async function loadAdminToken(path: string): Promise<string> {
  const flag = `--admin-token-file (${envName('admin-token-file')})`;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`invalid ${flag}: cannot read ${path}: ${(err as Error).message}`);
  }
  const token = text.trim();
  if (token === '') throw new ConfigError(`invalid ${flag}: ${path} is empty`);
  return token;
}
