/**
 * The service beside pods the real controllers make (issue 35): kube-controller-manager,
 * kube-scheduler, kwok nodes and the LeaderWorkerSet controller with its webhook, all on the e2e
 * API server. Each scenario changes a LeaderWorkerSet (or its pods) as a user would, waits for the
 * controllers to settle, and then requires `/api/v1/cells` to equal the cells the API's own pods
 * imply within 5 s. Across the file, every `cell.changed` event published alive is audited against
 * everything the API said: no cell may be published alive with a worker of another incarnation of
 * its group (LWS's rule: the worker's StatefulSet is owned by the leader's uid).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertPodIpsInRange } from '../environment/real-cluster.js';
import { EventRecorder } from '../support-controller.js';
import { LWS, ROLE, waitFor } from '../support-service.js';
import {
  allAtRevision,
  allReady,
  auditIncarnations,
  leaderWorkerSet,
  noneOf,
  RealClusterLane,
  replaced,
} from './support.js';

/** Leader replacements and rolling-update steps the file must see in total (issue 35). */
const MIN_LEADER_REPLACEMENTS = 20;

describe('the service beside LeaderWorkerSets made by the real controllers', () => {
  let lane: RealClusterLane;
  let events: EventRecorder;
  const sizes = new Map<string, number>();
  const lags: number[] = [];

  const converged = async (settled: (pods: V1Pod[]) => boolean): Promise<void> => {
    lags.push(await lane.converged(settled));
  };
  /**
   * Deletes pod `name` of LWS engine once its pods are a second old, and waits until the
   * controllers replaced it and `groups` groups are Ready again.
   */
  const replacePod = async (name: string, groups: number): Promise<void> => {
    await lane.waitUntilASecondOld('engine');
    const before = await lane.podUid(name);
    await lane.deletePod(name);
    await converged((pods) => allReady('engine', groups, 2)(pods) && replaced(name, before)(pods));
  };

  beforeAll(async () => {
    lane = await RealClusterLane.start({ namespace: 'real-cluster', roles: [ROLE] });
    await lane.startService();
    events = new EventRecorder(lane.base, ['cell.changed']);
    await events.opened;
  });

  afterAll(async () => {
    await events?.close();
    await lane?.stop();
    if (lags.length > 0) {
      console.log(
        `real-cluster: ${lags.length} convergences, service lag after the API settled: ` +
          `max ${Math.max(...lags)} ms, median ${[...lags].sort((a, b) => a - b)[lags.length >> 1]} ms; ` +
          `leader replacements seen: ${lane?.history.leaderReplacements()}`,
      );
    }
  });

  it('LWS 3×2: the webhook labels each pod and the cells match the API', async () => {
    sizes.set('engine', 2);
    await lane.lws.create(leaderWorkerSet('engine', 3, 2));
    await converged(allReady('engine', 3, 2));
    const pods = await lane.pods();
    const worker = pods.find((p) => p.metadata?.name === 'engine-0-1')!;
    expect(worker.metadata?.labels).toMatchObject({
      [`${LWS}/name`]: 'engine',
      [`${LWS}/group-index`]: '0',
      [`${LWS}/worker-index`]: '1',
    });
    expect(worker.metadata?.labels?.[`${LWS}/group-key`]).toBeTruthy();
    const cells = (await (await fetch(`${lane.base}/api/v1/cells?pool=engine`)).json()) as {
      cells: Array<{ alive: boolean }>;
    };
    expect(cells.cells.map((c) => c.alive)).toEqual([true, true, true]);
  });

  it('the range assertion fails on a pod IP outside 127.0.0.0/8', async () => {
    const pods = await lane.pods();
    expect(() => assertPodIpsInRange(pods)).not.toThrow();
    const moved = structuredClone(pods[0]!);
    moved.status = { ...moved.status, podIP: '10.0.1.4', podIPs: [{ ip: '10.0.1.4' }] };
    expect(() => assertPodIpsInRange([...pods, moved])).toThrow(/10\.0\.1\.4/);
  });

  it('LWS of size 1: one-pod groups', async () => {
    sizes.set('solo', 1);
    await lane.lws.create(leaderWorkerSet('solo', 2, 1));
    await converged((pods) => allReady('solo', 2, 1)(pods) && allReady('engine', 3, 2)(pods));
  });

  it('scales up and down: 3 → 5 → 2 groups', async () => {
    await lane.lws.patch('engine', { spec: { replicas: 5 } });
    await converged(allReady('engine', 5, 2));
    await lane.lws.patch('engine', { spec: { replicas: 2 } });
    await converged(allReady('engine', 2, 2));
  });

  it('a deleted worker: LWS recreates its whole group', async () => {
    await replacePod('engine-0-1', 2);
  });

  it('a deleted leader (background propagation) brings a new group, repeatedly', async () => {
    for (let round = 0; round < 8; round += 1) await replacePod(`engine-${round % 2}`, 2);
  });

  it('rolling updates replace every group, one at a time', async () => {
    for (const revision of ['b', 'c', 'd']) {
      await lane.waitUntilASecondOld('engine');
      await lane.lws.patch('engine', {
        spec: {
          replicas: 3,
          leaderWorkerTemplate: {
            workerTemplate: { metadata: { annotations: { 'e2e/revision': revision } } },
          },
        },
      });
      await converged(
        (pods) => allReady('engine', 3, 2)(pods) && allAtRevision('engine', revision)(pods),
      );
    }
  });

  it('a container restart under RecreateGroupOnPodRestart recreates the group', async () => {
    const { core, namespace } = lane;
    await lane.waitUntilASecondOld('engine');
    const leaderBefore = await lane.podUid('engine-1');
    const worker = await core.readNamespacedPodStatus({ namespace, name: 'engine-1-1' });
    const statuses = worker.status?.containerStatuses ?? [];
    // What the kubelet writes when the container restarts: the count goes up.
    await core.replaceNamespacedPodStatus({
      namespace,
      name: 'engine-1-1',
      body: {
        ...worker,
        status: {
          ...worker.status,
          containerStatuses: statuses.map((s) => ({
            ...s,
            restartCount: (s.restartCount ?? 0) + 1,
          })),
        },
      },
    });
    await converged(
      (pods) => allReady('engine', 3, 2)(pods) && replaced('engine-1', leaderBefore)(pods),
    );
  });

  it('enough leader replacements were seen, and no cell was ever alive with a stale member', async () => {
    // Top up with leader deletions until the file has seen MIN_LEADER_REPLACEMENTS.
    let round = 0;
    while (lane.history.leaderReplacements() < MIN_LEADER_REPLACEMENTS) {
      await replacePod(`engine-${round % 3}`, 3);
      round += 1;
    }
    await waitFor('the last events', async () => (events.events.length > 0 ? true : undefined));
    const audit = auditIncarnations(events.events, lane.history, sizes);
    console.log(
      `real-cluster: ${lane.history.leaderReplacements()} leader replacements; audited ${audit.audited} ` +
        `alive publications, ${audit.unidentified.length} unidentified, ${audit.stale.length} stale`,
    );
    expect(audit.audited).toBeGreaterThan(MIN_LEADER_REPLACEMENTS);
    expect(audit.stale).toEqual([]);
  });

  it('deleting the LWS removes every cell', async () => {
    await lane.lws.delete('engine');
    await lane.lws.delete('solo');
    await converged((pods) => noneOf('engine')(pods) && noneOf('solo')(pods));
    const body = (await (await fetch(`${lane.base}/api/v1/cells`)).json()) as { cells: unknown[] };
    expect(body.cells).toEqual([]);
  });
});
