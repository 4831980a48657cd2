/**
 * The built service (`node dist/src/main.js --source kubernetes`) against a real kube-apiserver:
 * LeaderWorkerSet-labelled pods whose status is written as a kubelet would, read back through the
 * service's HTTP API and /metrics over loopback, then SIGTERM and a clean exit.
 *
 * It runs as the namespace's unprivileged user bound to deploy/role.yaml, so it also proves that
 * the shipped Role (get/list/watch on pods) is all the service needs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FakeKubelet,
  type KubeEnvironment,
  onNode,
  startKubeEnvironment,
} from './environment/index.js';
import { bindShippedRoles, type Cell, lwsPod, MAIN, ROLE, waitFor } from './support-service.js';

describe('pool-controller against a real apiserver', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let kubelet: FakeKubelet;
  let namespace: string;
  let child: ChildProcess;
  let stdout = '';
  let base = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  const cell = async (id: string): Promise<Cell | undefined> => {
    const res = await fetch(`${base}/api/v1/cells/${id}`);
    return res.status === 200 ? ((await res.json()) as { cell: Cell }).cell : undefined;
  };

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('pool-service');

    // The shipped Role, bound to a user that has nothing else.
    await bindShippedRoles(env, namespace, [ROLE]);

    for (const worker of [0, 1]) {
      await core.createNamespacedPod({ namespace, body: lwsPod('engine', 0, worker, 2) });
      await kubelet.markRunning(namespace, worker === 0 ? 'engine-0' : 'engine-0-1');
    }
    await core.createNamespacedPod({ namespace, body: lwsPod('engine', 1, 0, 2) });
    await kubelet.markRunning(namespace, 'engine-1', { ready: false });
    // Not part of any pool: the default selector keeps it out of the cache altogether.
    await core.createNamespacedPod({
      namespace,
      body: onNode({
        metadata: { name: 'bystander', labels: { app: 'other' } },
        spec: { containers: [{ name: 'x', image: 'registry.invalid/x:1' }] },
      }),
    });

    child = spawn(
      process.execPath,
      [
        MAIN,
        '--source',
        'kubernetes',
        '--kubeconfig',
        env.unprivileged.kubeconfigPath,
        '--namespace',
        namespace,
        '--listen',
        '127.0.0.1:0',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH } },
    );
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr?.resume();
    exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    const port = await waitFor('the service to listen', async () => {
      const line = stdout.split('\n').find((l) => l.includes('"control plane listening"'));
      return line ? (JSON.parse(line).address.port as number) : undefined;
    });
    base = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await env?.stop();
  });

  it('becomes ready once the pods are listed and the watch is open', async () => {
    await waitFor('readiness', async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );
    const reflector = (await (await fetch(`${base}/api/v1/reflector`)).json()) as Record<
      string,
      unknown
    >;
    expect(reflector).toMatchObject({ source: 'kubernetes', phase: 'watching', healthy: true });
    const store = (await (await fetch(`${base}/api/v1/store`)).json()) as { objects: number };
    expect(store.objects).toBe(3);
  });

  it('serves the cells with liveness, reasons and the leader address', async () => {
    const res = await fetch(`${base}/api/v1/cells`);
    expect(res.headers.get('x-pool-controller-source')).toBe('kubernetes');
    const body = (await res.json()) as { source: string; cells: Cell[] };
    expect(body.source).toBe('kubernetes');
    expect(body.cells.map((c) => [c.id, c.alive])).toEqual([
      ['engine-00000', true],
      ['engine-00001', false],
    ]);
    const leader = await core.readNamespacedPod({ namespace, name: 'engine-0' });
    expect(body.cells[0]?.address).toBe(`${leader.status?.podIP}:30000`);
    expect(body.cells[1]?.whyNotAlive.map((r) => r.reason)).toEqual([
      'PodsNotReady',
      'IndicesMissing',
    ]);
  });

  it('follows a container restart, a graceful delete and the pod going away', async () => {
    const before = (await cell('engine-00000'))!.generation;
    await kubelet.restartContainer(namespace, 'engine-0-1');
    const restarted = await waitFor('the restart', async () => {
      const c = await cell('engine-00000');
      return c && c.generation !== before ? c : undefined;
    });
    expect(restarted.members[1]?.restarts).toBe(1);

    await core.deleteNamespacedPod({ namespace, name: 'engine-0-1', gracePeriodSeconds: 30 });
    const deleting = await waitFor('the termination', async () => {
      const c = await cell('engine-00000');
      return c?.members[1]?.deleting ? c : undefined;
    });
    expect(deleting.alive).toBe(false);
    expect(deleting.whyNotAlive.map((r) => r.reason)).toContain('PodsDeleting');

    await kubelet.finalizeDeletion(namespace, 'engine-0-1');
    const shrunk = await waitFor('the deletion', async () => {
      const c = await cell('engine-00000');
      return c && c.members.length === 1 ? c : undefined;
    });
    expect(shrunk.whyNotAlive).toEqual([
      expect.objectContaining({ reason: 'IndicesMissing', indices: [1] }),
    ]);
  });

  it('drops a cell whose last pod is gone', async () => {
    await core.deleteNamespacedPod({ namespace, name: 'engine-1', gracePeriodSeconds: 0 });
    await waitFor('the cell to go', async () =>
      (await fetch(`${base}/api/v1/cells/engine-00001`)).status === 404 ? true : undefined,
    );
  });

  it('accepts a forced reconcile from loopback', async () => {
    const res = await fetch(`${base}/api/v1/cells/engine-00000/reconcile`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({
      source: 'kubernetes',
      count: 1,
      queued: [`${namespace}/engine-00000`],
    });
  });

  it('exposes controller-runtime, reflector and pool metrics', async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const value = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
    };
    expect(
      value('controller_runtime_reconcile_total{controller="cell",result="success"}'),
    ).toBeGreaterThan(0);
    expect(value('controller_runtime_reconcile_total{controller="cell",result="error"}')).toBe(0);
    expect(value('workqueue_adds_total{name="cell",controller="cell"}')).toBeGreaterThan(0);
    expect(value('pool_controller_reflector_lists_total')).toBeGreaterThanOrEqual(1);
    expect(value('pool_controller_reflector_watch_opens_total')).toBeGreaterThanOrEqual(1);
    expect(value('pool_controller_reflector_healthy')).toBe(1);
    expect(
      value(`pool_controller_cells{namespace="${namespace}",pool="engine",alive="false"}`),
    ).toBe(1);
    expect(value(`pool_controller_pods{namespace="${namespace}",pool="engine"}`)).toBe(1);
    expect(value('pool_controller_source_info{source="kubernetes"}')).toBe(1);
  });

  it('exits 0 on SIGTERM, promptly', async () => {
    const started = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(stdout).toContain('"msg":"stopped"');
  });
});
