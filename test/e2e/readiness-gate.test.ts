/**
 * The cell readiness gate with the BUILT service (`node dist/src/main.js --cell-readiness-gate`)
 * against a real kube-apiserver, run as the unprivileged user bound to exactly deploy/role.yaml,
 * deploy/leader-election-role.yaml and the optional deploy/readiness-gate/role.yaml (so it also
 * proves that Role is all the gate needs). There is no kubelet: the fake one writes pods/status,
 * and, as the real one, sets a gated pod's Ready only when its readiness gates are True.
 *
 * Two replicas share the Lease (lease 4 s, renew deadline 3 s, retry 1 s, drift 2 s). The done-when
 * of issue 21, in order: gated pods of an alive cell get True while their Ready is False only
 * because of the gate (no deadlock); ungated pods are never written; a worker whose containers go
 * not ready flips every gated member to False with the reason within 1 s; a condition someone
 * else changed is repaired; the follower writes nothing; a stolen Lease stops the writes.
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_CACHE_MS } from '../../routes/metrics.js';
import { formatMicroTime } from '../../src/index.js';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  bindShippedRoles,
  kubernetesSourceArgs,
  LEADER_ELECTION_ROLE,
  lwsPod,
  READINESS_GATE_ROLE,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from './support-service.js';

const GATE = 'pool-controller/cell-alive';
const FIELD_MANAGER = 'pool-controller-cell-readiness-gate';
const LEASE = 'pool-controller';
/** The done-when's bound on a flip reaching every gated member. */
const FLIP_WITHIN_MS = 1_000;

interface Replica {
  name: string;
  process: ServiceProcess;
  url: string;
}

describe('cell readiness gate against a real apiserver', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let ca: Buffer;
  let kubelet: FakeKubelet;
  let namespace: string;
  const replicas: Replica[] = [];

  const gated = (pool: string, group: number, worker: number): V1Pod => {
    const pod = lwsPod(pool, group, worker, 2);
    pod.spec!.readinessGates = [{ conditionType: GATE }];
    return pod;
  };
  const read = (name: string) => core.readNamespacedPod({ namespace, name });
  const conditionOf = (pod: V1Pod, type: string) =>
    pod.status?.conditions?.find((c) => c.type === type);
  const gateOf = async (name: string) => conditionOf(await read(name), GATE);

  const start = async (name: string): Promise<Replica> => {
    const process = spawnService(
      [
        ...kubernetesSourceArgs(env, namespace),
        '--cell-readiness-gate',
        '--events=false',
        '--leader-elect-lease-duration',
        '4s',
        '--leader-elect-renew-deadline',
        '3s',
        '--leader-elect-retry-period',
        '1s',
        '--drift-interval',
        '2s',
        '--log-format',
        'json',
      ],
      { POD_NAME: name },
    );
    const replica = { name, process, url: await process.listening() };
    replicas.push(replica);
    return replica;
  };
  const leading = async (replica: Replica): Promise<boolean> =>
    ((await (await fetch(`${replica.url}/api/v1/leader`)).json()) as { leading: boolean }).leading;
  /** `pool_controller_cell_readiness_gate_writes_total`, summed over its labels. */
  const writes = async (replica: Replica): Promise<number> => {
    const text = await (await fetch(`${replica.url}/metrics`)).text();
    let total = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('pool_controller_cell_readiness_gate_writes_total{')) {
        total += Number(line.slice(line.lastIndexOf(' ') + 1));
      }
    }
    return total;
  };
  const bothGates = async (status: string, reason: string): Promise<true | undefined> => {
    const [leader, worker] = await Promise.all([gateOf('engine-0'), gateOf('engine-0-1')]);
    return leader?.status === status &&
      leader.reason === reason &&
      worker?.status === status &&
      worker.reason === reason
      ? true
      : undefined;
  };
  /** One JSON call to the API server as the admin (the Lease, as another client writes it). */
  const admin = (method: string, path: string, body?: unknown) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const req = request(
        new URL(path, env.server),
        {
          method,
          ca,
          signal: AbortSignal.timeout(5_000),
          headers: {
            authorization: `Bearer ${env.token}`,
            accept: 'application/json',
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => {
            try {
              resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
            } catch (error) {
              reject(error);
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });
  const leasePath = (): string =>
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${LEASE}`;
  const logs = (): string =>
    replicas.map((r) => `--- ${r.name}\n${r.process.output().slice(-3000)}`).join('\n');

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    ca = await readFile(env.caPath);
    namespace = await env.createNamespace('gate');
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE, READINESS_GATE_ROLE]);
    for (const worker of [0, 1]) {
      const pod = gated('engine', 0, worker);
      await core.createNamespacedPod({ namespace, body: pod });
      await kubelet.markRunning(namespace, pod.metadata!.name!);
      const plain = lwsPod('plain', 0, worker, 2);
      await core.createNamespacedPod({ namespace, body: plain });
      await kubelet.markRunning(namespace, plain.metadata!.name!);
    }
    await start('gate-a');
  });

  afterAll(async () => {
    for (const replica of replicas) {
      if (replica.process.child.exitCode === null) replica.process.child.kill('SIGKILL');
    }
    await env?.stop();
  });

  it('sets True on the gated pods of an alive cell whose Ready is False only because of the gate', async () => {
    await waitFor(`both gates True\n${logs()}`, () => bothGates('True', 'CellAlive'), 30_000);
    const leader = await read('engine-0');
    expect(conditionOf(leader, GATE)?.message).toMatch(
      /^cell engine-00000 is alive and routable at /,
    );
    // No kubelet ran since: Ready is still False, held by the gate alone, and yet the cell counts.
    expect(conditionOf(leader, 'Ready')?.status).toBe('False');
    expect(conditionOf(leader, 'ContainersReady')?.status).toBe('True');
    const owners = (leader.metadata?.managedFields ?? [])
      .filter((f) => f.subresource === 'status' && f.manager === FIELD_MANAGER)
      .map((f) => [f.operation, JSON.stringify(f.fieldsV1)]);
    expect(owners).toHaveLength(1);
    expect(owners[0]![0]).toBe('Apply');
    expect(owners[0]![1]).toContain(`"k:{\\"type\\":\\"${GATE}\\"}"`);
    // The kubelet's next status update sees the gate True and makes the pod Ready.
    await kubelet.markRunning(namespace, 'engine-0');
    expect(conditionOf(await read('engine-0'), 'Ready')?.status).toBe('True');

    const [served] = (
      (await (await fetch(`${replicas[0]!.url}/api/v1/cells?pool=engine`)).json()) as {
        cells: Array<{ alive: boolean; members: Array<{ readinessGate: unknown }> }>;
      }
    ).cells;
    expect(served?.alive).toBe(true);
    expect(served?.members.map((m) => m.readinessGate)).toEqual([
      { status: 'True', reason: 'CellAlive' },
      { status: 'True', reason: 'CellAlive' },
    ]);
  });

  it('never writes a pod that does not carry the gate', async () => {
    for (const name of ['plain-0', 'plain-0-1']) {
      const pod = await read(name);
      expect(conditionOf(pod, GATE)).toBeUndefined();
      expect((pod.metadata?.managedFields ?? []).map((f) => f.manager)).not.toContain(
        FIELD_MANAGER,
      );
    }
  });

  it("flips every gated member to False with the reason within 1 s of a worker's containers going not ready", async () => {
    await kubelet.markNotReady(namespace, 'engine-0-1');
    const changedAt = Date.now();
    await waitFor(
      `both gates False\n${logs()}`,
      () => bothGates('False', 'PodsNotReady'),
      10_000,
      20,
    );
    const elapsed = Date.now() - changedAt;
    console.info(`readiness gate: not-ready worker to both gates False in ${elapsed} ms`);
    expect(elapsed).toBeLessThanOrEqual(FLIP_WITHIN_MS);
    expect((await gateOf('engine-0'))?.message).toBe('cell engine-00000: engine-0-1 is not ready');
    await kubelet.markRunning(namespace, 'engine-0-1');
    await waitFor('both gates True again', () => bothGates('True', 'CellAlive'), 10_000, 20);
  });

  it('repairs a condition someone else changed (a drift run)', async () => {
    const pod = await read('engine-0');
    const condition = conditionOf(pod, GATE)!;
    condition.status = 'False';
    condition.reason = 'SomeoneElse';
    await core.replaceNamespacedPodStatus({ namespace, name: 'engine-0', body: pod });
    expect((await gateOf('engine-0'))?.reason).toBe('SomeoneElse');
    await waitFor(
      'the leader to repair it',
      async () => {
        const gate = await gateOf('engine-0');
        return gate?.status === 'True' && gate.reason === 'CellAlive' ? true : undefined;
      },
      15_000,
    );
  });

  it('a follower writes nothing while the leader writes every flip', async () => {
    const follower = await start('gate-b');
    const leader = replicas[0]!;
    expect(await leading(leader)).toBe(true);
    await waitFor('the follower to sync', async () =>
      (await fetch(`${follower.url}/readyz`)).ok ? true : undefined,
    );
    expect(await leading(follower)).toBe(false);
    const before = await writes(leader);
    await kubelet.markNotReady(namespace, 'engine-0-1');
    await waitFor('both gates False', () => bothGates('False', 'PodsNotReady'), 10_000, 20);
    await kubelet.markRunning(namespace, 'engine-0-1');
    await waitFor('both gates True', () => bothGates('True', 'CellAlive'), 10_000, 20);
    // /metrics is rendered at most every METRICS_CACHE_MS: wait for a render after the flips.
    await waitFor(
      'the leader to count the four writes',
      async () => ((await writes(leader)) >= before + 4 ? true : undefined),
      METRICS_CACHE_MS * 3,
    );
    expect(await writes(follower)).toBe(0);
    // The follower observes the same cells and gates, and has no sink target of its own.
    const sinks = (await (await fetch(`${follower.url}/api/v1/sinks`)).json()) as {
      sinks: Array<{ lastAppliedAt: string | null }>;
    };
    expect(sinks.sinks.every((s) => s.lastAppliedAt === null)).toBe(true);
  });

  it('a stolen Lease stops the writes until a replica leads again', async () => {
    const [a, b] = replicas as [Replica, Replica];
    // A foreign holder with a long lease: neither replica may lead until it expires or goes.
    for (let attempt = 1; ; attempt += 1) {
      const lease = (await admin('GET', leasePath())).body;
      const stamp = formatMicroTime(new Date());
      const answer = await admin('PUT', leasePath(), {
        ...lease,
        spec: {
          ...(lease.spec as Record<string, unknown>),
          holderIdentity: 'intruder',
          leaseDurationSeconds: 60,
          acquireTime: stamp,
          renewTime: stamp,
        },
      });
      if (answer.status === 200) break;
      if (answer.status !== 409 || attempt >= 10) {
        throw new Error(`PUT Lease: HTTP ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
    }
    await waitFor(
      'both replicas to stop leading',
      async () => (!(await leading(a)) && !(await leading(b)) ? true : undefined),
      10_000,
    );
    // A render from after both stopped leading (/metrics is cached up to METRICS_CACHE_MS).
    await sleep(METRICS_CACHE_MS + 500);
    const writesBefore = (await writes(a)) + (await writes(b));
    await kubelet.markNotReady(namespace, 'engine-0-1');
    // Three drift intervals with nobody leading: the gates must stay True (stale, as designed).
    const until = Date.now() + 6_000;
    while (Date.now() < until) {
      expect((await gateOf('engine-0'))?.status).toBe('True');
      await sleep(200);
    }
    expect((await writes(a)) + (await writes(b))).toBe(writesBefore);
    // The intruder leaves: a replica leads again and the gates catch up.
    expect((await admin('DELETE', leasePath())).status).toBe(200);
    await waitFor(
      'a gated flip after the takeover',
      () => bothGates('False', 'PodsNotReady'),
      30_000,
    );
  });
});
