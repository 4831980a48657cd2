/**
 * Health endpoints with controller-runtime's semantics and text format (pkg/healthz), so probes,
 * scripts and people used to `/healthz?verbose` from any controller or the apiserver read ours
 * the same way.
 *
 * - all checks pass: 200 `ok` (or, with `?verbose`, one `[+]name ok` line per check and a final
 *   `<endpoint> check passed`);
 * - any fails: 500 with every line, failures as `[-]name failed: reason withheld` (the endpoint is
 *   public, so the reason is only given by `/<endpoint>/<name>`) and a final `<endpoint> check failed`;
 * - `?exclude=name` (repeatable) skips a check, shown as `[+]name excluded: ok`; excluding an
 *   unknown name adds a `warn:` line.
 */

export interface HealthCheck {
  name: string;
  /** `undefined` when healthy, otherwise why not (shown only by the single-check endpoint). */
  check(): string | undefined;
}

export interface HealthResponse {
  status: 200 | 500;
  body: string;
}

/** What one endpoint (`healthz` or `readyz`) answers for these checks and query. */
export function runChecks(
  endpoint: string,
  checks: readonly HealthCheck[],
  query: { verbose: boolean; exclude: readonly string[] },
): HealthResponse {
  const excluded = new Set(query.exclude);
  let failed = false;
  let out = '';
  for (const { name, check } of checks) {
    if (excluded.delete(name)) {
      out += `[+]${name} excluded: ok\n`;
      continue;
    }
    if (check() === undefined) {
      out += `[+]${name} ok\n`;
    } else {
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

/** `/<endpoint>/<name>`: 200 `ok`, or 500 with the reason, which only this endpoint reveals. */
export function runOneCheck(check: HealthCheck): HealthResponse {
  const reason = check.check();
  return reason === undefined
    ? { status: 200, body: 'ok' }
    : { status: 500, body: `internal server error: ${reason}\n` };
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
  ) {}

  get checkNames(): string[] {
    return this.checks.map((c) => c.name);
  }

  /** `/<name>`: every check not excluded. */
  report(query: { verbose: boolean; exclude: readonly string[] }): HealthResponse {
    return runChecks(this.name, this.checks, query);
  }

  /** `/<name>/<check>`; `undefined` when there is no check by that name. */
  reportOne(checkName: string): HealthResponse | undefined {
    const check = this.checks.find((c) => c.name === checkName);
    return check === undefined ? undefined : runOneCheck(check);
  }
}
