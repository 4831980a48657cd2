/**
 * Static checks of deploy/monitoring/ and the chart's copies of it. The rules' validity and
 * behaviour (promtool) and the metric names against a live scrape are test/e2e/monitoring.test.ts.
 */
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = new URL('../../', import.meta.url);
const MONITORING = new URL('deploy/monitoring/', ROOT);
const CHART = new URL('charts/pool-controller/', ROOT);

// biome-ignore lint/suspicious/noExplicitAny: manifests are untyped YAML documents
type Any = any;

const text = (url: URL) => readFile(url, 'utf8');

async function alerts(): Promise<Any[]> {
  const rule = parse(await text(new URL('prometheus-rules.yaml', MONITORING)));
  return rule.spec.groups.flatMap((g: Any) => g.rules);
}

/** GitHub's heading anchors: lowercase, spaces to '-', punctuation dropped. */
function anchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map(([, title]) =>
      title!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('deploy/monitoring/', () => {
  it('lists the ServiceMonitor, the rules and the dashboard for the Grafana sidecar', async () => {
    const kustomization = parse(await text(new URL('kustomization.yaml', MONITORING)));
    expect(kustomization.resources).toEqual(['servicemonitor.yaml', 'prometheus-rules.yaml']);
    expect(kustomization.configMapGenerator).toEqual([
      expect.objectContaining({
        files: ['grafana-dashboard.json'],
        options: expect.objectContaining({
          labels: expect.objectContaining({ grafana_dashboard: '1' }),
        }),
      }),
    ]);
  });

  it('gives every alert a severity and a runbook section of docs/operations.md that exists', async () => {
    const sections = anchors(await text(new URL('docs/operations.md', ROOT)));
    const rules = await alerts();
    expect(rules.length).toBeGreaterThanOrEqual(9);
    for (const rule of rules) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels.severity);
      expect(rule.annotations.summary, rule.alert).toEqual(expect.any(String));
      expect(rule.annotations.runbook).toBe(`docs/operations.md#${rule.alert.toLowerCase()}`);
      expect(rule.annotations.runbook_url, rule.alert).toBe(rule.annotations.runbook);
      expect(sections, rule.alert).toContain(rule.alert.toLowerCase());
    }
  });

  it('has a unit test per alert that fires and one that stays quiet', async () => {
    const cases: Any[] = [];
    for (const file of await readdir(new URL('tests/', MONITORING))) {
      const suite = parse(await text(new URL(`tests/${file}`, MONITORING)));
      expect(suite.rule_files).toEqual(['pool-controller.rules.yaml']);
      cases.push(...suite.tests.flatMap((t: Any) => t.alert_rule_test));
    }
    for (const { alert } of await alerts()) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${alert} fires`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${alert} quiet`,
      ).toBe(true);
    }
  });

  it('gives every dashboard panel a query, an id of its own and the datasource variable', async () => {
    const dashboard = JSON.parse(await text(new URL('grafana-dashboard.json', MONITORING)));
    const panels = dashboard.panels.filter((p: Any) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(12);
    const ids = dashboard.panels.map((p: Any) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of panels) {
      expect(panel.datasource.uid, panel.title).toBe(['$', '{datasource}'].join('')); // Grafana's variable, not a JS template
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets) expect(target.expr, panel.title).toMatch(/\S/);
    }
    expect(dashboard.templating.list.map((v: Any) => v.name)).toEqual(['datasource', 'job']);
  });

  it('is what the chart ships: its files/ are copies', async () => {
    for (const file of ['prometheus-rules.yaml', 'grafana-dashboard.json']) {
      expect(await text(new URL(`files/${file}`, CHART)), file).toBe(
        await text(new URL(file, MONITORING)),
      );
    }
  });

  it("versions the chart's app as the package", async () => {
    const chart = parse(await text(new URL('Chart.yaml', CHART)));
    const pkg = JSON.parse(await text(new URL('package.json', ROOT)));
    expect(chart.appVersion).toBe(pkg.version);
  });
});
