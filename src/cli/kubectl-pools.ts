/**
 * `kubectl pools`: the controller's pools and cells as `kubectl get` tables, read through the API
 * server's service proxy (no port-forward) or from a given URL.
 *
 * kubectl runs any `kubectl-<name>` on its PATH as `kubectl <name>`, so installing the package
 * puts this beside `pool-controller`. Through the proxy the request is
 * `GET /api/v1/namespaces/NS/services/SERVICE:http/proxy/api/v1/pools` with the kubeconfig's
 * credentials, which needs `get` on `services/proxy` in that namespace (docs/operations.md).
 * Everything it prints comes from the API; nothing of the kubeconfig reaches the output.
 */
import { statusFromResponse } from '../kubernetes/client/api-errors.js';
import { apiRequest } from '../kubernetes/client/api-request.js';
import { type ApiConnection, loadApiConnection } from '../kubernetes/client/connection.js';
import { redactSecrets } from '../kubernetes/client/safe-error.js';

/** The Service the chart and deploy/ create, and its port name. */
const DEFAULT_SERVICE = 'pool-controller:http';

/** A proxied answer is a list of pools or cells: bounded like the API's own (8 MiB). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** One request, through the proxy or not: 30 s, as kubectl's default request timeout is none but a person waits no longer. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The plugin's usage, printed by `--help` and after a usage error. */
const KUBECTL_POOLS_USAGE = `Usage: kubectl pools [cells] [-o wide|json] [-n NAMESPACE] [--service NAME:PORT]
                    [--kubeconfig PATH] [--context NAME] [--url URL] [--pool POOL]

Prints pool-controller's pools (or cells) as kubectl get does, read through the API server's
service proxy: GET /api/v1/namespaces/NAMESPACE/services/${DEFAULT_SERVICE}/proxy/api/v1/pools.
  cells              the cells instead of the pools (placeholders of missing cells included)
  -o wide            more columns; -o json: the API's answer as it is
  -n, --namespace    where the pool-controller Service runs (default: default)
  --service          the Service and port to proxy to (default ${DEFAULT_SERVICE})
  --url              read http(s)://host:port/api/v1/... directly instead (a port-forward)
  --pool             only this pool's cells
`;

/** A usage error: printed with the usage, exit 2. */
class PluginUsageError extends Error {
  override readonly name = 'PluginUsageError';
}

/** What the command line asks for. */
interface PluginArgs {
  what: 'pools' | 'cells';
  output: 'table' | 'wide' | 'json';
  namespace?: string | undefined;
  service: string;
  kubeconfig?: string | undefined;
  context?: string | undefined;
  url?: string | undefined;
  pool?: string | undefined;
  help: boolean;
}

/** Parses the command line; throws `PluginUsageError` naming the argument. */
export function parsePluginArgs(argv: readonly string[]): PluginArgs {
  const args: PluginArgs = {
    what: 'pools',
    output: 'table',
    service: DEFAULT_SERVICE,
    help: false,
  };
  const value = (i: number, flag: string): string => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('-')) throw new PluginUsageError(`${flag} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i += 1) {
    const raw = argv[i]!;
    const [flag, inline] =
      raw.startsWith('--') && raw.includes('=') ? raw.split('=', 2) : [raw, undefined];
    const take = (): string => {
      if (inline !== undefined) return inline;
      const v = value(i, flag!);
      i += 1;
      return v;
    };
    switch (flag) {
      case 'pools':
      case 'cells':
        if (i !== 0) throw new PluginUsageError(`${flag} must come first`);
        args.what = flag;
        break;
      case '-h':
      case '--help':
        args.help = true;
        break;
      case '-o':
      case '--output': {
        const o = take();
        if (o !== 'wide' && o !== 'json') {
          throw new PluginUsageError(
            `-o: expected wide or json, got ${JSON.stringify(o.slice(0, 40))}`,
          );
        }
        args.output = o;
        break;
      }
      case '-n':
      case '--namespace':
        args.namespace = take();
        break;
      case '--service':
        args.service = take();
        break;
      case '--kubeconfig':
        args.kubeconfig = take();
        break;
      case '--context':
        args.context = take();
        break;
      case '--url':
        args.url = take();
        break;
      case '--pool':
        args.pool = take();
        break;
      default:
        throw new PluginUsageError(`unknown argument ${JSON.stringify(raw.slice(0, 40))}`);
    }
  }
  // A Service name and optional port name: DNS labels, so nothing to escape in the proxy path.
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/.test(args.service)) {
    throw new PluginUsageError('--service: expected NAME or NAME:PORT (DNS labels)');
  }
  if (args.url !== undefined && !/^https?:\/\//.test(args.url)) {
    throw new PluginUsageError('--url: expected http:// or https://');
  }
  return args;
}

/** `rows` as kubectl prints a table: upper-case headings, columns padded by three spaces. */
export function formatTable(headings: readonly string[], rows: readonly string[][]): string {
  const widths = headings.map((h, c) =>
    Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) => (c === cells.length - 1 ? cell : cell.padEnd(widths[c]! + 3)))
      .join('')
      .trimEnd();
  return `${[line(headings), ...rows.map(line)].join('\n')}\n`;
}

/** How long ago an RFC 3339 time was, as kubectl's AGE column writes it (`45s`, `12m`, `3h`, `2d`). */
export function age(since: string, nowMs: number): string {
  const ms = nowMs - Date.parse(since);
  if (!Number.isFinite(ms)) return '<unknown>';
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7_200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3_600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

interface ApiPool {
  namespace: string;
  name: string;
  cells: number;
  aliveCells: number;
  pods: number;
  desiredCells: number | null;
  missingCells: number[];
  capacity: string;
  capacitySince: string;
  capacityReason: string;
}

interface ApiCell {
  namespace: string;
  id: string;
  pool: string;
  alive: boolean;
  whyNotAlive: Array<{ reason: string }>;
  routable: boolean;
  address: string | null;
  generation: string;
  members: Array<{ ready: boolean }>;
  lastTransitionTime: string;
}

/** The table for an answer of `GET /api/v1/pools` or `/api/v1/cells`. */
function renderAnswer(args: PluginArgs, body: unknown, nowMs: number): string {
  if (args.output === 'json') return `${JSON.stringify(body, null, 2)}\n`;
  const wide = args.output === 'wide';
  if (args.what === 'pools') {
    const pools = (body as { pools: ApiPool[] }).pools;
    const headings = ['NAME', 'ALIVE', 'DESIRED', 'MISSING', 'CAPACITY', 'SINCE'];
    if (wide) headings.push('NAMESPACE', 'CELLS', 'PODS', 'REASON');
    return formatTable(
      headings,
      pools.map((p) => {
        const row = [
          p.name,
          String(p.aliveCells),
          p.desiredCells === null ? '<unknown>' : String(p.desiredCells),
          String(p.missingCells.length),
          p.capacity,
          age(p.capacitySince, nowMs),
        ];
        if (wide) row.push(p.namespace, String(p.cells), String(p.pods), p.capacityReason);
        return row;
      }),
    );
  }
  const cells = (body as { cells: ApiCell[] }).cells;
  const headings = ['NAME', 'POOL', 'ALIVE', 'READY', 'REASON', 'AGE'];
  if (wide) headings.push('NAMESPACE', 'ROUTABLE', 'ADDRESS', 'GENERATION');
  return formatTable(
    headings,
    cells.map((c) => {
      const row = [
        c.id,
        c.pool,
        String(c.alive),
        `${c.members.filter((m) => m.ready).length}/${c.members.length}`,
        c.whyNotAlive.map((r) => r.reason).join(',') || '<none>',
        age(c.lastTransitionTime, nowMs),
      ];
      if (wide) row.push(c.namespace, String(c.routable), c.address ?? '<none>', c.generation);
      return row;
    }),
  );
}

/** The API path the arguments ask for. */
function apiPath(args: PluginArgs): string {
  if (args.what === 'pools') return '/api/v1/pools';
  return args.pool === undefined
    ? '/api/v1/cells'
    : `/api/v1/cells?pool=${encodeURIComponent(args.pool)}`;
}

/** What `runKubectlPools` reads and writes through; tests pass their own. */
interface PluginIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The API server connection for the proxy path; default the kubeconfig's. */
  connect?: (options: { kubeconfigPath?: string; context?: string }) => Promise<ApiConnection>;
  /** The namespace when `-n` is not given; default `default`. */
  defaultNamespace?: string;
  now?: () => number;
}

async function readJson(text: string, what: string): Promise<unknown> {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what}: the answer is not JSON`);
  }
}

/** Runs the plugin; resolves with its exit code (0, 1 for a failed request, 2 for usage). */
export async function runKubectlPools(argv: readonly string[], io: PluginIo): Promise<number> {
  let args: PluginArgs;
  try {
    args = parsePluginArgs(argv);
  } catch (error) {
    if (!(error instanceof PluginUsageError)) throw error;
    io.stderr(`kubectl-pools: ${error.message}\n${KUBECTL_POOLS_USAGE}`);
    return 2;
  }
  if (args.help) {
    io.stdout(KUBECTL_POOLS_USAGE);
    return 0;
  }
  const path = apiPath(args);
  let body: unknown;
  try {
    if (args.url !== undefined) {
      const url = `${args.url.replace(/\/+$/, '')}${path}`;
      const res = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
      body = await readJson(await res.text(), `GET ${url}`);
    } else {
      const connect = io.connect ?? loadApiConnection;
      const connection = await connect({
        ...(args.kubeconfig !== undefined ? { kubeconfigPath: args.kubeconfig } : {}),
        ...(args.context !== undefined ? { context: args.context } : {}),
      });
      const namespace = args.namespace ?? io.defaultNamespace ?? 'default';
      const proxied = `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${args.service}/proxy${path}`;
      const what = `GET ${proxied}`;
      const answer = await apiRequest(connection, {
        method: 'GET',
        path: proxied,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        timeoutMs: REQUEST_TIMEOUT_MS,
        what,
        maxBodyBytes: MAX_ANSWER_BYTES,
        tooLarge: () => new Error(`${what}: answer larger than ${MAX_ANSWER_BYTES} bytes`),
      });
      if (answer.statusCode !== 200) {
        const status = statusFromResponse(answer.statusCode, answer.body, undefined);
        throw new Error(
          `${what}: HTTP ${answer.statusCode}${status.reason ? ` ${status.reason}` : ''}${status.message ? `: ${redactSecrets(status.message)}` : ''}`,
        );
      }
      body = await readJson(answer.body, what);
    }
  } catch (error) {
    io.stderr(`kubectl-pools: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  io.stdout(renderAnswer(args, body, (io.now ?? Date.now)()));
  return 0;
}
