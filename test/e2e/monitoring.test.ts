/**
 * deploy/monitoring/ with the real promtool (built by tools.sh): `promtool check rules` on the
 * PrometheusRule's groups, `promtool test rules` on deploy/monitoring/tests/, and against a live
 * scrape of the built service (`node dist/src/main.js --source simulated`): `promtool check
 * metrics` with zero findings, and every metric the dashboard and the alerts query is exported.
 * Needs no apiserver.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { freeLoopbackPort } from './environment/free-port.js';
import { BUILD_TIMEOUT_MS, ensureTool } from './environment/tools.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url);
const MONITORING = new URL('deploy/monitoring/', ROOT);
const MAIN = fileURLToPath(new URL('dist/src/main.js', ROOT));

/** Prometheus' own series, not the service's: `up` is made by the scrape itself. */
const SCRAPE_SERIES = new Set(['up']);

const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects: identifiers outside strings, label matchers,
 * ranges and grouping clauses, not called as functions or aggregations, and not keywords.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ');
  const names = new Set<string>();
  for (const match of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice(match.index + match[0].length).trimStart();
    if (after.startsWith('(') || PROMQL_WORDS.has(match[0].toLowerCase())) continue;
    if (/^\d/.test(bare.slice(match.index - 1, match.index))) continue; // 1e9, 5m
    names.add(match[0]);
  }
  return [...names];
}

/** `x_bucket`/`x_sum`/`x_count` of a histogram `x` are exported as `x`'s samples. */
function exported(name: string, types: Map<string, string>): boolean {
  if (types.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && ['histogram', 'summary'].includes(types.get(base) ?? '');
}

interface Rules {
  spec: { groups: { name: string; rules: { alert: string; expr: string }[] }[] };
}

describe('deploy/monitoring', () => {
  let promtool: string;
  let work: string;
  let service: ChildProcess | undefined;
  let scrape = '';
  let serviceLog = '';

  // One hook: building the tool on a fresh machine takes minutes, hence its own timeout.
  beforeAll(async () => {
    promtool = await ensureTool('promtool');
    work = await mkdtemp(join(tmpdir(), 'pool-monitoring-'));
    // The PrometheusRule's spec is a Prometheus rule file: its groups.
    const rules = parse(
      await readFile(new URL('prometheus-rules.yaml', MONITORING), 'utf8'),
    ) as Rules;
    await writeFile(join(work, 'pool-controller.rules.yaml'), stringify(rules.spec));
    for (const file of await readdir(new URL('tests/', MONITORING))) {
      await copyFile(fileURLToPath(new URL(`tests/${file}`, MONITORING)), join(work, file));
    }

    // The built service, simulated, scraped once its story has made pools and cells.
    await run('npm', ['run', 'build'], { cwd: fileURLToPath(ROOT) });
    const port = await freeLoopbackPort();
    service = spawn(
      process.execPath,
      [MAIN, '--source', 'simulated', '--listen', `127.0.0.1:${port}`, '--simulation-step', '50ms'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    for (const stream of [service.stdout, service.stderr]) {
      stream?.setEncoding('utf8').on('data', (chunk: string) => {
        serviceLog = (serviceLog + chunk).slice(-4000);
      });
    }
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/metrics`);
        scrape = await response.text();
        if (response.ok && /^pool_controller_cells\{/m.test(scrape)) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`no pools in /metrics in 30 s:\n${serviceLog}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    service?.kill('SIGTERM');
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('promtool check rules: the rule groups are valid, with no lint findings', async () => {
    const { stdout } = await run(promtool, [
      'check',
      'rules',
      '--lint=all',
      '--lint-fatal',
      join(work, 'pool-controller.rules.yaml'),
    ]).catch((err: { stdout?: string; stderr?: string }) => {
      throw new Error(`promtool check rules: ${err.stdout}${err.stderr}`);
    });
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('promtool test rules: every alert fires when it should and stays quiet otherwise', async () => {
    const tests = (await readdir(work)).filter((f) => f.endsWith('.test.yaml'));
    expect(tests.length).toBeGreaterThan(0);
    const { stdout } = await run(promtool, ['test', 'rules', ...tests], { cwd: work }).catch(
      (err: { stdout?: string; stderr?: string }) => {
        throw new Error(`promtool test rules: ${err.stdout}${err.stderr}`);
      },
    );
    expect(stdout).toContain('SUCCESS');
  });

  it('promtool check metrics: a live scrape of the service has no findings', async () => {
    const child = spawn(promtool, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
      });
    }
    child.stdin.end(scrape);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(output.trim(), output).toBe('');
    expect(code).toBe(0);
  });

  it('exports every metric the dashboard panels query', async () => {
    const types = new Map(
      [...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name!, type!]),
    );
    const dashboard = JSON.parse(
      await readFile(new URL('grafana-dashboard.json', MONITORING), 'utf8'),
    ) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const queried = new Set<string>();
    const missing: string[] = [];
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets ?? []) {
        const names = metricNames(expr);
        expect(names.length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
        for (const name of names) {
          queried.add(name);
          if (!exported(name, types)) {
            missing.push(`${panel.title}: ${name}`);
          }
        }
      }
    }
    expect(missing).toEqual([]);
    expect(queried.size).toBeGreaterThan(15);
  });

  it('exports every metric the alerts query', async () => {
    const types = new Map(
      [...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name!, type!]),
    );
    const rules = parse(
      await readFile(new URL('prometheus-rules.yaml', MONITORING), 'utf8'),
    ) as Rules;
    const missing: string[] = [];
    for (const rule of rules.spec.groups.flatMap((g) => g.rules)) {
      for (const name of metricNames(rule.expr)) {
        if (!exported(name, types) && !SCRAPE_SERIES.has(name)) {
          missing.push(`${rule.alert}: ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('reads metric names out of PromQL (the extraction the two checks above rely on)', () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (le, phase) (rate(x_seconds_bucket{job=~"$job", a="b c"}[$__rate_interval])))',
      ),
    ).toEqual(['x_seconds_bucket']);
    expect(
      metricNames(
        'sum by (ns) (a_total{r="x"}) > 0 unless on (ns) b == 1e9 and time() - c offset 5m',
      ),
    ).toEqual(['a_total', 'b', 'c']);
  });
});
