/**
 * EndpointSlices of LeaderWorkerSet leaders the real controllers make (issue 35): the built
 * service with `--publish-endpointslices` (the pod, Lease and EndpointSlice Roles) beside an LWS
 * 3×2. An EndpointSlice refuses loopback addresses, so this cluster's one kwok node hands out pod
 * IPs from TEST-NET-1 (192.0.2.0/24, documentation addresses): they are published, never
 * connected to — a watch of the kernel's TCP tables for the whole file proves no socket on this
 * machine ever had one as its remote address.
 *
 * The slice's endpoints are polled throughout and audited like a router's worker list
 * (router-audit.ts): an address is published only while its leader's cell is alive in the API (the
 * documented rule and LWS's incarnation rule), or at most REMOVE_WITHIN_MS after; never before.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DiscoveryV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_NET_POD_RANGE } from '../environment/real-cluster.js';
import { ENDPOINTSLICES_ROLE, LEADER_ELECTION_ROLE, ROLE, waitFor } from '../support-service.js';
import { ConnectionWatch } from './connection-watch.js';
import { aliveIntervals, auditRouter, WorkerPolls } from './router-audit.js';
import {
  allAtRevision,
  allReady,
  ENGINE_PORT,
  httpPort,
  leaderWorkerSet,
  RealClusterLane,
  replaced,
} from './support.js';

const POOL = 'engine';
const GROUPS = 3;
const SIZE = 2;
const MANAGED = 'endpointslice.kubernetes.io/managed-by=pool-controller';
/** How long a dead cell's leader may stay published: the service's watch, reconcile and write. */
const REMOVE_WITHIN_MS = 3_000;
/** How long the slices get to match the API after it settled. */
const SLICES_WITHIN_MS = 5_000;
const POLL_EVERY_MS = 100;

describe('EndpointSlices of LeaderWorkerSet leaders the real controllers make', () => {
  let lane: RealClusterLane;
  let discovery: DiscoveryV1Api;
  let polls: WorkerPolls;
  const connections = new ConnectionWatch(TEST_NET_POD_RANGE);
  const measured: string[] = [];

  /** Each managed slice's `ip:port` endpoints, all slices together, sorted. */
  const published = async (): Promise<string[]> => {
    const list = await discovery.listNamespacedEndpointSlice({
      namespace: lane.namespace,
      labelSelector: MANAGED,
    });
    return list.items
      .flatMap((slice) =>
        (slice.endpoints ?? []).flatMap((e) =>
          e.addresses.flatMap((ip) => (slice.ports ?? []).map((p) => `${ip}:${p.port}`)),
        ),
      )
      .sort();
  };
  /** The API's leaders as `ip:port`, sorted. */
  const leaders = async (): Promise<string[]> =>
    (await lane.leaders(POOL)).map((p) => `${p.status?.podIP}:${httpPort(p)}`).sort();
  const converged = async (settled: (pods: V1Pod[]) => boolean, what: string) => {
    const cells = await lane.converged(settled);
    const started = Date.now();
    let last: string[] = [];
    let want: string[] = [];
    await waitFor(
      `the slices to publish exactly the leaders ${JSON.stringify(want)} (last ${JSON.stringify(last)})`,
      async () => {
        want = await leaders();
        last = await published();
        return JSON.stringify(last) === JSON.stringify(want) ? true : undefined;
      },
      SLICES_WITHIN_MS,
      50,
    );
    measured.push(
      `${what}: cells ${cells} ms, slices ${Date.now() - started} ms after the API settled`,
    );
  };

  beforeAll(async () => {
    connections.start();
    lane = await RealClusterLane.start({
      namespace: 'rc-slices',
      roles: [ROLE, LEADER_ELECTION_ROLE, ENDPOINTSLICES_ROLE],
      podRange: 'test-net',
    });
    discovery = lane.env.kubeConfig.makeApiClient(DiscoveryV1Api);
    await lane.startService(['--publish-endpointslices']);
    polls = new WorkerPolls(
      async () => (await published()).map((a) => ({ url: `http://${a}` })),
      POLL_EVERY_MS,
    );
  });

  afterAll(async () => {
    await polls?.stop();
    connections.stop();
    await lane?.stop();
    if (measured.length > 0) console.log(`real-cluster EndpointSlices: ${measured.join('; ')}`);
  });

  it('publishes the leaders of an LWS’s alive groups, at TEST-NET addresses', async () => {
    await lane.lws.create(leaderWorkerSet(POOL, GROUPS, SIZE));
    await converged(allReady(POOL, GROUPS, SIZE), 'create');
    expect(lane.cluster.podRange).toBe(TEST_NET_POD_RANGE);
    expect(await published()).toHaveLength(GROUPS);
  });

  it('follows a group restart and a rolling update to a new port', async () => {
    await lane.waitUntilASecondOld(POOL);
    const before = await lane.podUid('engine-1');
    await lane.deletePod('engine-1-1');
    await converged(
      (pods) => allReady(POOL, GROUPS, SIZE)(pods) && replaced('engine-1', before)(pods),
      'worker deleted, group recreated',
    );
    await lane.waitUntilASecondOld(POOL);
    await lane.lws.roll(POOL, 'b', { port: ENGINE_PORT + 1 });
    await converged(
      (pods) => allReady(POOL, GROUPS, SIZE)(pods) && allAtRevision(POOL, 'b')(pods),
      'rolling update',
    );
    const slices = await discovery.listNamespacedEndpointSlice({
      namespace: lane.namespace,
      labelSelector: MANAGED,
    });
    expect(slices.items.map((s) => s.metadata?.name)).toEqual([`${POOL}-alive-${ENGINE_PORT + 1}`]);
  });

  it('never published a leader whose cell the API did not hold alive', async () => {
    const intervals = aliveIntervals(lane.timeline.versions, lane.history.setOwners, POOL);
    const audit = auditRouter(polls.polls, intervals, REMOVE_WITHIN_MS);
    measured.push(
      `${audit.polls} polls, ${audit.judged} endpoints judged, longest published after its cell ` +
        `stopped being alive ${audit.longestRemovalMs} ms`,
    );
    expect(audit.violations).toEqual([]);
    expect(audit.judged).toBeGreaterThan(audit.polls / 2);
    expect(polls.errors).toEqual([]);
  });

  it('nothing on this machine ever connected to a TEST-NET pod IP', async () => {
    // The watch itself works: a loopback connection in a range of its own is seen.
    const probe = new ConnectionWatch('127.31.0.0/16');
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.31.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.31.0.1:${port}/`, {
      headers: { connection: 'keep-alive' },
    });
    await response.text();
    probe.sample();
    server.closeAllConnections();
    server.close();
    expect([...probe.seen]).not.toEqual([]);

    connections.sample();
    measured.push(`${connections.samples} samples of the TCP tables`);
    expect(connections.samples).toBeGreaterThan(100);
    expect([...connections.seen]).toEqual([]);
  });
});
