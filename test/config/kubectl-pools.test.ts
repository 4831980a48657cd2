import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { age, formatTable, parsePluginArgs, runKubectlPools } from '../../src/cli/kubectl-pools.js';
import { lwsPod } from '../support/lws-pod.js';
import {
  closeAll,
  DrivenWorkloadSource,
  type Harness,
  harness,
  WALL_CLOCK_MS,
  workload,
} from '../support/service-harness.js';
import { eventually, until } from '../support/until.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  await closeAll();
});

/** A running service (its app listening on loopback) with pool engine Degraded 1 / 2. */
async function running(): Promise<{ h: Harness; url: string }> {
  const workloads = new DrivenWorkloadSource();
  const h = await harness({ pods: [lwsPod({ group: 0 })], workloads });
  await until(() => workloads.fake.awaitingPull, { what: 'the workload stream' });
  workloads.fake.push({
    type: 'replace',
    objects: new Map([['ns/engine', workload('engine', 2)]]),
  });
  await eventually(() => expect(h.service.cells.pools()[0]?.capacity).toBe('Degraded'));
  const url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { h, url };
}

async function run(
  argv: string[],
  extra = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runKubectlPools(argv, {
    stdout: (t) => {
      out += t;
    },
    stderr: (t) => {
      err += t;
    },
    now: () => WALL_CLOCK_MS + 90_000,
    ...extra,
  });
  return { code, out, err };
}

describe('kubectl pools against a running service', () => {
  it('prints the pools as kubectl get does, alive against desired', async () => {
    const { url } = await running();
    const { code, out } = await run(['--url', url]);
    expect(code).toBe(0);
    expect(out).toBe(
      [
        'NAME     ALIVE   DESIRED   MISSING   CAPACITY   SINCE',
        'engine   1       2         1         Degraded   90s',
        '',
      ].join('\n'),
    );
    const wide = await run(['pools', '-o', 'wide', '--url', url]);
    expect(wide.out.split('\n')[1]).toMatch(
      /^engine +1 +2 +1 +Degraded +90s +ns +1 +1 +1 of 2 cells alive$/,
    );
  });

  it('prints the cells, a missing one as its NoPods placeholder, and -o json as the API said', async () => {
    const { url } = await running();
    const { out } = await run(['cells', '--url', url]);
    expect(out.split('\n').slice(0, 3)).toEqual([
      'NAME           POOL     ALIVE   READY   REASON   AGE',
      'engine-00000   engine   true    1/1     <none>   90s',
      'engine-00001   engine   false   0/0     NoPods   90s',
    ]);
    const json = JSON.parse(
      (await run(['cells', '-o', 'json', '--url', url, '--pool', 'engine'])).out,
    );
    expect(json.cells.map((c: { id: string }) => c.id)).toEqual(['engine-00000', 'engine-00001']);
  });

  it("reads through the API server's service proxy with the kubeconfig's credentials", async () => {
    const { h } = await running();
    const seen: Array<{ url: string; auth: string | undefined }> = [];
    const proxy = createServer(async (req, res) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization });
      const prefix = '/api/v1/namespaces/inference/services/pool-controller:http/proxy';
      if (!req.url?.startsWith(prefix) || req.headers.authorization !== 'Bearer t0ken') {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            code: 403,
            reason: 'Forbidden',
            message:
              'services "pool-controller:http" is forbidden: cannot get resource "services/proxy"',
          }),
        );
        return;
      }
      const answer = await h.app.inject({ url: req.url.slice(prefix.length) });
      res.writeHead(answer.statusCode, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    servers.push(proxy);
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const server = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const connect = (token: string) => async () => ({
      server,
      requestOptions: async () => ({ headers: { Authorization: `Bearer ${token}` } }),
    });
    const ok = await run(['-n', 'inference'], { connect: connect('t0ken') });
    if (ok.code !== 0) throw new Error(ok.err);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('engine   1       2');
    expect(seen[0]).toEqual({
      url: '/api/v1/namespaces/inference/services/pool-controller:http/proxy/api/v1/pools',
      auth: 'Bearer t0ken',
    });
    const denied = await run(['-n', 'inference'], { connect: connect('other') });
    expect(denied.code).toBe(1);
    expect(denied.err).toMatch(/HTTP 403 Forbidden: .*cannot get resource "services\/proxy"/);
    expect(denied.err).not.toContain('other');
  });
});

describe('kubectl pools arguments and tables', () => {
  it('refuses what it does not know, with exit 2 and the usage', async () => {
    expect(() => parsePluginArgs(['-o', 'yaml'])).toThrow(/expected wide or json/);
    expect(() => parsePluginArgs(['--url', 'ftp://x'])).toThrow(/http/);
    expect(() => parsePluginArgs(['-n'])).toThrow(/-n needs a value/);
    expect(() => parsePluginArgs(['--service', '../x'])).toThrow(/--service: expected NAME/);
    expect(() => parsePluginArgs(['-o', 'wide', 'cells'])).toThrow(/cells must come first/);
    const { code, err } = await run(['--bogus']);
    expect(code).toBe(2);
    expect(err).toMatch(/unknown argument "--bogus"\nUsage: kubectl pools/);
    expect((await run(['--help'])).out).toMatch(/^Usage: kubectl pools/);
  });

  it('pads columns as kubectl does and writes ages as kubectl does', () => {
    expect(
      formatTable(
        ['NAME', 'X'],
        [
          ['a', '1'],
          ['bbbbbb', '22'],
        ],
      ),
    ).toBe('NAME     X\na        1\nbbbbbb   22\n');
    const t = Date.parse('2026-01-01T00:00:00Z');
    expect(age('2026-01-01T00:00:00Z', t + 45_000)).toBe('45s');
    expect(age('2026-01-01T00:00:00Z', t + 12 * 60_000)).toBe('12m');
    expect(age('2026-01-01T00:00:00Z', t + 3 * 3_600_000)).toBe('3h');
    expect(age('2026-01-01T00:00:00Z', t + 3 * 86_400_000)).toBe('3d');
  });
});
