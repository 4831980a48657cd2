import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { loadStatusPageAssets, statusPageCsp } from '../../routes/status-page/assets.js';
import { renderStatusPage } from '../../routes/status-page/document.js';
import { escapeHtml } from '../../routes/status-page/markup.js';
import type { StatusCell, StatusPageData } from '../../routes/status-page/page-data.js';
import { formatAge } from '../../routes/status-page/sections.js';
import { SOURCE_HEADER } from '../../src/http/error-shape.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness } from '../support/service-harness.js';

/** package.json's version, which the running service reports. */
const PACKAGE_VERSION = (
  JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

afterEach(closeAll);

/** The build's assets (`npm test` builds first). */
const assets = loadStatusPageAssets();

/** Two engine cells (one alive, one with a not-ready worker) and a trainer cell. */
function world() {
  return [
    lwsPod({ group: 0, worker: 0, size: 2, podIP: '10.0.0.1' }),
    lwsPod({ group: 0, worker: 1, size: 2 }),
    lwsPod({ group: 1, worker: 0, size: 2, podIP: '10.0.0.3' }),
    lwsPod({ group: 1, worker: 1, size: 2, ready: false }),
    lwsPod({ pool: 'trainer', group: 0, worker: 0, podIP: '10.0.0.9' }),
  ];
}

/** The `<tr data-cell=…>` row of `key` in `html`. */
function cellRow(html: string, key: string): string {
  const match = html.match(new RegExp(`<tr data-cell="${key}"[^>]*>.*?</tr>`, 's'));
  if (!match) throw new Error(`no row for ${key}`);
  return match[0];
}

/** `'sha256-…'` of the one inline element `tag` of `html`. */
function inlineHash(html: string, tag: 'script' | 'style'): string {
  const bodies = [...html.matchAll(new RegExp(`<${tag}>(.*?)</${tag}>`, 'gs'))].map((m) => m[1]!);
  expect(bodies).toHaveLength(1);
  return `'sha256-${createHash('sha256').update(bodies[0]!, 'utf8').digest('base64')}'`;
}

describe('GET /', () => {
  it('serves an HTML document with a strict CSP that allows exactly its inline script and style', async () => {
    const { app } = await harness({ pods: world() });
    const res = await app.inject({ url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers[SOURCE_HEADER]).toBe('kubernetes');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.body.startsWith('<!doctype html>')).toBe(true);

    const csp = String(res.headers['content-security-policy']);
    expect(csp).toBe(statusPageCsp(assets));
    const directives = new Map(
      csp.split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name!, values];
      }),
    );
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual([inlineHash(res.body, 'script')]);
    expect(directives.get('style-src')).toEqual([inlineHash(res.body, 'style')]);
    expect(directives.get('connect-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:/);
  });

  it('loads nothing from elsewhere and has no inline handlers or style attributes', async () => {
    const { app } = await harness({ pods: world() });
    const { body } = await app.inject({ url: '/' });
    expect(body).not.toMatch(/\b(?:src|href)=/i);
    expect(body).not.toMatch(/\son[a-z]+=/i);
    expect(body).not.toMatch(/\sstyle=/i);
    expect(body).not.toMatch(/https?:\/\//);
  });

  it('renders every cell with its state, reasons, generation and address, and every pool', async () => {
    const { app, service } = await harness({ pods: world() });
    const { body } = await app.inject({ url: '/' });

    for (const cell of service.cells.list()) {
      const row = cellRow(body, cell.key);
      expect(row).toContain(`>${cell.id}<`);
      expect(row).toContain(`data-alive="${cell.alive}"`);
      expect(row).toContain(cell.generation);
    }
    const alive = cellRow(body, 'ns/engine-00000');
    expect(alive).toContain('>alive<');
    expect(alive).toContain('10.0.0.1:30000');
    expect(alive).toContain('2 / 2');
    const notAlive = cellRow(body, 'ns/engine-00001');
    expect(notAlive).toContain('>not alive<');
    expect(notAlive).toContain('PodsNotReady');
    expect(notAlive).toContain('engine-1-1 is not ready');
    expect(notAlive).toContain('1 / 2');
    // In state for: the service's wall clock stamped both cells at the moment of the render.
    expect(notAlive).toContain(
      '<td class="since" title="since 2025-06-01T12:00:00.000Z">0s<div class="muted changes" title="2025-06-01T12:00:00.000Z not alive (PodsNotReady)" data-changes="1">\u25bc</div></td>',
    );
    expect(alive).toContain('title="2025-06-01T12:00:00.000Z alive" data-changes="1">\u25b2<');

    expect(body).toMatch(
      /<tr data-pool="ns\/engine"[^>]*>.*?1 \/ 2 alive.*?Unknown.*?for 0 ms.*?<\/tr>/s,
    );
    expect(body).toMatch(/<tr data-pool="ns\/trainer"[^>]*>.*?1 \/ 1 alive.*?<\/tr>/s);
    expect(body).toContain('1 / 2 pools fully alive');
  });

  it('marks an alive cell that no sink routes to, with its why-not-routable reasons', async () => {
    const { app } = await harness({
      pods: [
        lwsPod({ group: 0, worker: 0, podIP: '10.0.0.1' }),
        lwsPod({ group: 1, worker: 0, podIP: '10.0.0.1' }),
        lwsPod({ group: 2, worker: 0, podIP: '10.0.0.2' }),
      ],
    });
    const { body } = await app.inject({ url: '/' });
    const clash = cellRow(body, 'ns/engine-00000');
    expect(clash).toContain('data-routable="false"');
    expect(clash).toContain('>alive, not routable<');
    expect(clash).toContain('AddressConflict');
    expect(clash).toContain('also claimed by ns/engine-00001');
    const fine = cellRow(body, 'ns/engine-00002');
    expect(fine).toContain('data-routable="true"');
    expect(fine).toContain('>alive<');
  });

  it('shows the queue, the reflector, leadership and the coordinator', async () => {
    const { app, podSource, service } = await harness({ pods: world() });
    podSource.current = {
      ...podSource.current,
      phase: 'backoff',
      healthy: false,
      lastError: 'watch 500',
    };
    const { body } = await app.inject({ url: '/' });
    const section = (id: string) =>
      body.match(new RegExp(`<div class="card" id="${id}">.*?</dl>`, 's'))![0];

    expect(section('queue')).toMatch(/<dt>Depth<\/dt><dd>0<\/dd>/);
    expect(section('queue')).toMatch(/<dt>In flight<\/dt><dd><span class="muted">nothing<\/span>/);
    expect(section('queue')).toMatch(/<dt>Retries<\/dt><dd>0<\/dd>/);
    expect(section('reflector')).toContain('>backoff<');
    expect(section('reflector')).toContain('watch 500');
    // The harness's service leads alone (no Lease); its coordinator is as the plane says.
    const leader = service.leader();
    expect(leader.leading).toBe(true);
    expect(section('leadership')).toMatch(/<dt>Leading<\/dt><dd><span class="badge ok">yes</);
    expect(section('leadership')).toContain(`<span class="mono">${leader.identity}</span>`);
    expect(section('leadership')).toContain('none (leads alone)');
    expect(section('leadership')).toContain(`<dd>${leader.since}</dd>`);
    const coordinator = service.coordinator();
    const yes = (v: boolean) => (v ? 'ok">yes' : 'warn">no');
    expect(section('coordinator')).toContain(
      `<dt>Acting</dt><dd><span class="badge ${yes(coordinator.acting)}<`,
    );
    expect(section('coordinator')).toContain(
      `<dt>Cells synced</dt><dd><span class="badge ${yes(coordinator.cellsSynced)}<`,
    );
    expect(section('coordinator')).toContain(
      `<dt>Failures in a row</dt><dd><span class="">${coordinator.state.consecutiveFailures}<`,
    );
    const last = coordinator.state.lastCompleted;
    expect(section('coordinator')).toContain(last ? `#${last.id} ${last.result}, ` : 'none yet');
  });

  it('escapes names from the cluster: a hostile pool label and pod name stay text', async () => {
    const hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>';
    const { app } = await harness({
      pods: [
        lwsPod({ pool: hostile, group: 0, worker: 0, size: 2, podIP: '10.0.0.1' }),
        lwsPod({ pool: hostile, group: 0, worker: 1, size: 2, ready: false, name: `w${hostile}` }),
      ],
    });
    const cells = (await app.inject({ url: '/api/v1/cells' })).json().cells;
    expect(cells).toHaveLength(1);
    expect(cells[0].id).toContain('<script>');

    const { body } = await app.inject({ url: '/' });
    expect(body).not.toContain('<img');
    expect(body).not.toContain('<script>alert');
    expect(body.match(/<script>/g)).toHaveLength(1);
    expect(body).toContain(escapeHtml(cells[0].id));
    expect(body).toContain(`data-cell="${escapeHtml(cells[0].key)}"`);
    expect(body).toContain(escapeHtml(`w${hostile} is not ready`));
    expect(body).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;');
  });

  it('shows the version of the build that serves it', async () => {
    const { app, service } = await harness({ pods: world() });
    const { body } = await app.inject({ url: '/' });
    expect(body).toContain(`v${service.buildInfo.version} (revision `);
    expect(service.buildInfo.version).toBe(PACKAGE_VERSION);
  });

  it('says so when there are no cells yet', async () => {
    const { app } = await harness({ start: false });
    const { body, statusCode } = await app.inject({ url: '/' });
    expect(statusCode).toBe(200);
    expect(body).toContain('No cells yet.');
    expect(body).toContain('No pools yet.');
    expect(body).toMatch(/<dt>Synced<\/dt><dd><span class="badge warn">no</);
  });
});

describe('GET / and the event log', () => {
  it('names the event id just before the last 20 logged events, so the log starts with them', async () => {
    const h = await harness({ driftIntervalMs: null });
    const history = h.service.eventStreams.history;
    for (let i = 0; i < 30; i += 1) {
      h.service.bus.publish({ type: 'leader.changed', identity: `r${i}` });
      // Not logged (a run's start shows on its end line): not counted among the 20.
      h.service.bus.publish({ type: 'reconciliation.started', id: i, reasons: ['test'] });
    }
    const html = (await h.app.inject({ url: '/' })).body;
    const from = /data-events-from="([^"]+)"/.exec(html)![1]!;
    // The last 20 `leader.changed` are the last 40 events, one in two.
    expect(from).toBe(`${history.epoch}-${history.latest - 40}`);
  });

  it('names the id before the first event when fewer than 20 logged events were published', async () => {
    const h = await harness({ driftIntervalMs: null });
    h.service.bus.publish({ type: 'phase.completed', id: 1, phase: 'render', durationMs: 1 });
    const html = (await h.app.inject({ url: '/' })).body;
    const history = h.service.eventStreams.history;
    expect(history.latest).toBeGreaterThan(1);
    expect(html).toContain(`data-events-from="${history.epoch}-0"`);
  });
});

describe('openapi.yaml', () => {
  it('documents GET / as text/html', async () => {
    const doc = await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8');
    expect(doc).toMatch(
      /\n {2}\/:\n {4}get:\n {6}operationId: getStatusPage\n {6}summary: Status page \(HTML\)[\s\S]*?\n {12}text\/html:/,
    );
  });
});

describe('renderStatusPage', () => {
  const data: StatusPageData = {
    source: 'simulated',
    build: { version: '1.2.3', revision: '0123456789ab', nodeVersion: 'v24.22.3' },
    renderedAt: '2025-06-01T12:00:00.000Z',
    eventsFrom: 'feedbeef-41',
    pools: [],
    cells: [],
    queue: {
      synced: true,
      depth: 4,
      queued: ['ns/a', 'ns/b', 'ns/c', 'ns/d'],
      inFlight: { key: 'ns/x', runningForMs: 1500 },
      retries: [{ key: 'ns/y', failures: 3, dueInMs: 2500 }],
      nextResyncInMs: null,
    },
    reflector: { phase: 'watching', healthy: true, cursor: '42', lastError: null },
    leader: {
      identity: 'pod-a_1',
      leading: false,
      leader: 'pod-b_2',
      lease: 'ns/pool-controller',
      since: null,
    },
    coordinator: {
      leading: true,
      acting: true,
      cellsSynced: true,
      running: true,
      runningId: 8,
      pendingReasons: ['drift'],
      consecutiveFailures: 2,
      lastCompleted: { id: 7, result: 'failure', agoMs: 3200 },
      lastError: { phase: 'deploy', message: 'router <down>' },
    },
    sinks: [
      {
        kind: 'sglang-router',
        target: 'http://router:30000',
        pool: 'engine',
        mode: 'apply',
        desired: 1,
        listed: 4,
        pending: 0,
        heldByPanic: 3,
        panic: true,
        wouldAdd: 0,
        wouldRemove: 0,
        lastError: 'GET /workers: <refused>',
      },
    ],
  };

  it('shows each sink target: desired, listed, pending, held by panic and the last error, escaped', () => {
    const html = renderStatusPage(data, assets);
    const row = html.match(/<tr data-sink="http:\/\/router:30000">.*?<\/tr>/s)![0];
    expect(row).toContain('<td>1</td><td>4</td><td>0</td>');
    expect(row).toContain('<span class="badge warn">panic: 3</span>');
    expect(row).toContain('GET /workers: &lt;refused&gt;');
    expect(renderStatusPage({ ...data, sinks: [] }, assets)).toContain('No sink configured.');
  });

  it('shows how long each cell has been in its state and its last changes, newest first', () => {
    const cell = (key: string, inStateForMs: number | null): StatusCell => ({
      key,
      namespace: 'ns',
      id: key.slice(3),
      pool: 'engine',
      alive: true,
      whyNotAlive: [],
      routable: true,
      whyNotRoutable: [],
      generation: '0123456789abcdef',
      address: '10.0.0.1:30000',
      podsReady: 2,
      pods: 2,
      lastTransitionTime: '2025-06-01T11:56:48.000Z',
      transitions: [
        { at: '2025-06-01T11:56:48.000Z', alive: true, reasons: [] },
        {
          at: '2025-06-01T11:50:00.000Z',
          alive: false,
          reasons: ['PodsNotReady', 'IndicesMissing'],
        },
        { at: '2025-06-01T11:00:00.000Z', alive: true, reasons: [] },
      ],
      inStateForMs,
    });
    const html = renderStatusPage(
      { ...data, cells: [cell('ns/engine-00000', 192_000), cell('ns/engine-00001', null)] },
      assets,
    );
    expect(html).toContain('<th>In state for</th>');
    const timed = cellRow(html, 'ns/engine-00000');
    expect(timed).toContain('>3m 12s<');
    expect(timed).toContain(
      'title="2025-06-01T11:56:48.000Z alive\n2025-06-01T11:50:00.000Z not alive (PodsNotReady, IndicesMissing)\n2025-06-01T11:00:00.000Z alive" data-changes="3">\u25b2\u25bc\u25b2<',
    );
    // Without a clock (a drawer that does not know the time), the state's start instead.
    expect(cellRow(html, 'ns/engine-00001')).toContain('>since 2025-06-01T11:56:48.000Z<');
  });

  it('names the event id the script opens the stream from, and inlines the built script', () => {
    const html = renderStatusPage(data, assets);
    expect(html).toContain('data-events-from="feedbeef-41"');
    expect(html).toContain(`<script>${assets.script}</script>`);
    expect(html).toContain(`<style>${assets.style}</style>`);
  });

  it('names the build in the header', () => {
    const header = renderStatusPage(data, assets).match(/<header>.*?<\/header>/s)![0];
    expect(header).toContain(
      '<span id="build" class="muted">v1.2.3 (revision 0123456789ab, node v24.22.3)</span>',
    );
  });

  it('shows in-flight work, retries, the observed leader and the last failed run', () => {
    const html = renderStatusPage(data, assets);
    expect(html).toContain('ns/x for 1.5 s');
    expect(html).toContain('ns/a, ns/b, ns/c, …');
    expect(html).toContain('ns/y (3 failures, due in 2.5 s)');
    expect(html).toContain('pod-b_2');
    expect(html).toContain('ns/pool-controller');
    expect(html).toContain('running #8');
    expect(html).toContain('#7 failure, 3.2 s ago');
    expect(html).toContain('deploy: router &lt;down&gt;');
  });
});

describe('formatAge', () => {
  it('says a time in state in its two largest units, from seconds to days', () => {
    expect(formatAge(0)).toBe('0s');
    expect(formatAge(59_999)).toBe('59s');
    expect(formatAge(192_000)).toBe('3m 12s');
    expect(formatAge((2 * 3600 + 5 * 60 + 9) * 1000)).toBe('2h 5m');
    expect(formatAge((3 * 86_400 + 4 * 3600) * 1000)).toBe('3d 4h');
    expect(formatAge(-5)).toBe('0s');
  });
});

describe('escapeHtml', () => {
  it('escapes the five characters that can end text or an attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    );
  });
});
