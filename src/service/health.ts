/**
 * Health endpoints with controller-runtime's semantics and text format (pkg/healthz), so probes,
 * scripts and people used to `/healthz?verbose` from any controller or the apiserver read ours
 * the same way.
 *
 * - all checks pass: 200 `ok` (or, with `?verbose`, one `[+]name ok` line per check and a final
 *   `<endpoint> check passed`);
 * - any fails: 500 with every line, failures as `[-]name failed: reason withheld` and a final
 *   `<endpoint> check failed`;
 * - `?exclude=name` (repeatable) skips a check, shown as `[+]name excluded: ok`; excluding an
 *   unknown name adds a `warn:` line;
 * - `/<endpoint>/<name>`: 200 `ok`, or 500 `internal server error: reason withheld`.
 *
 * Unlike controller-runtime, whose `CheckHandler` answers a single check with the error's text,
 * no endpoint here gives a reason: the endpoints are unauthenticated, a reason can carry what an
 * error quoted (a kubeconfig's lines, a server's message), and a probe acts on the status alone.
 * The reason goes to the `onFailure` hook (the service logs it, as controller-runtime logs every
 * failed check) and, for the watch, to `GET /api/v1/reflector`'s redacted `lastError`.
 */

export interface HealthCheck {
  name: string;
  /** `undefined` when healthy, otherwise why not (never served; given to `onFailure`). */
  check(): string | undefined;
}

/** Hears every failed check with its reason, e.g. to log it; never sent to a client. */
type HealthFailureHook = (endpoint: string, check: string, reason: string) => void;

/** The body of a failed single check: the status says it failed, the reason stays inside. */
const WITHHELD_SINGLE_CHECK_BODY = 'internal server error: reason withheld\n';

/**
 * One health answer as the route sends it: the status a probe acts on and the text body
 * (controller-runtime's format); never a check's reason.
 */
interface HealthResponse {
  status: 200 | 500;
  body: string;
}

/** What one endpoint (`healthz` or `readyz`) answers for these checks and query. */
export function runChecks(
  endpoint: string,
  checks: readonly HealthCheck[],
  query: { verbose: boolean; exclude: readonly string[] },
  onFailure: HealthFailureHook = () => {},
): HealthResponse {
  const excluded = new Set(query.exclude);
  let failed = false;
  let out = '';
  for (const { name, check } of checks) {
    if (excluded.delete(name)) {
      out += `[+]${name} excluded: ok\n`;
      continue;
    }
    const reason = check();
    if (reason === undefined) {
      out += `[+]${name} ok\n`;
    } else {
      onFailure(endpoint, name, reason);
      out += `[-]${name} failed: reason withheld\n`;
      failed = true;
    }
  }
  if (excluded.size > 0) {
    const names = [...excluded]
      .sort()
      .map((n) => JSON.stringify(n))
      .join(',');
    out += `warn: some health checks cannot be excluded: no matches for ${names}\n`;
  }
  if (failed) return { status: 500, body: `${out}${endpoint} check failed\n` };
  if (!query.verbose) return { status: 200, body: 'ok' };
  return { status: 200, body: `${out}${endpoint} check passed\n` };
}

/** `/<endpoint>/<name>`: 200 `ok`, or 500 with the reason withheld, as `/<endpoint>` does. */
export function runOneCheck(
  check: HealthCheck,
  onFailure: HealthFailureHook = () => {},
  endpoint = '',
): HealthResponse {
  const reason = check.check();
  if (reason === undefined) return { status: 200, body: 'ok' };
  onFailure(endpoint, check.name, reason);
  return { status: 500, body: WITHHELD_SINGLE_CHECK_BODY };
}

/**
 * One endpoint's checks with its report format bound in, as the control plane hands it to the
 * routes: they ask for a report and never assemble one themselves.
 */
export class HealthEndpoint {
  constructor(
    /** `healthz` or `readyz`: the path, and the word in the report's last line. */
    readonly name: string,
    readonly checks: readonly HealthCheck[],
    /** Hears each failed check's reason (the service logs it); nothing else ever sees it. */
    readonly onFailure: HealthFailureHook = () => {},
  ) {}

  get checkNames(): string[] {
    return this.checks.map((c) => c.name);
  }

  /** `/<name>`: every check not excluded. */
  report(query: { verbose: boolean; exclude: readonly string[] }): HealthResponse {
    return runChecks(this.name, this.checks, query, this.onFailure);
  }

  /** `/<name>/<check>`; `undefined` when there is no check by that name. */
  reportOne(checkName: string): HealthResponse | undefined {
    const check = this.checks.find((c) => c.name === checkName);
    return check === undefined ? undefined : runOneCheck(check, this.onFailure, this.name);
  }

  /** Why a check fails now, for the service's own use (logs, tests); `undefined` when it passes. */
  failureReason(checkName: string): string | undefined {
    return this.checks.find((c) => c.name === checkName)?.check();
  }
}
