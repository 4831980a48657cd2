/**
 * Leader election on a Lease, proven with the BUILT service (`node dist/src/main.js`) against a
 * real kube-apiserver: three replicas in one namespace, each run as the environment's unprivileged
 * user bound to exactly deploy/role.yaml and deploy/leader-election-role.yaml, with short durations
 * (lease 4 s, renew deadline 3 s, retry period 1 s, drift 2 s).
 *
 * Throughout every scenario a background sampler (bounded lifetime) reads, every 200 ms, the Lease
 * (as the admin, from the API server) and then `GET /api/v1/leader` of every live replica, and
 * records a violation when:
 *
 * - two replicas report `leading: true` in one sample and their terms provably overlapped: each
 *   reported `since` (the wall-clock start of its current term; same machine, same clock) is
 *   before both requests were sent, so both led throughout [max(since), min(sent)]. Two "leading"
 *   answers whose terms need not overlap (a handover between the two requests) are counted, not
 *   failed: a real split brain lasts past the next sample, where it is provable;
 * - a replica reports leading with a `since` before the Lease read was sent (the read is answered
 *   before the `/leader` request is sent, so it happened inside the replica's term) and the Lease's
 *   `spec.holderIdentity` is not that replica. The only excuse is scenario 4's intruder, for the
 *   renew deadline (+ margin) after the test wrote it: a leader stops acting only then, by design.
 *
 * Scenarios share the namespace, the Lease and the pods; a killed replica is replaced at the start
 * of the next scenario. Waits poll against deadlines; no assertion rests on a fixed sleep.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatMicroTime } from '../../src/index.js';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { ManagedProcess } from './environment/managed-process.js';
import {
  bindShippedRoles,
  type Cell,
  kubernetesSourceArgs,
  LEADER_ELECTION_ROLE,
  listeningPort,
  lwsPod,
  MAIN,
  parseEventBlock,
  ROLE,
  waitFor,
} from './support-service.js';

const LEASE_MS = 4_000;
const RENEW_DEADLINE_MS = 3_000;
const RETRY_MS = 1_000;
const DRIFT_MS = 2_000;
/** client-go's acquire wait is `retry × (1 + random × 1.2)`: at most 2.2 retry periods. */
const JITTERED_RETRY_MS = RETRY_MS * 2.2;
/** Slack for a loaded 2-core machine: process start, event loop and request latency. */
const MARGIN_MS = 2_000;
/** How late a leader may notice the renew deadline (timer and event-stream latency). */
const STEP_DOWN_MARGIN_MS = 1_000;
const SAMPLE_MS = 200;
/** Clock-domain slack: the elector judges expiry on a monotonic clock, we compare wall clocks. */
const CLOCK_SLACK_MS = 100;
const LEASE_NAME = 'pool-controller';
const INTRUDER = 'intruder';
const REPLICAS = 3;
/** The cells once every pod exists: two alive cells of two pods, one single not-ready pod. */
const ALL_CELLS: Array<[string, boolean]> = [
  ['engine-00000', true],
  ['engine-00001', true],
  ['engine-00002', false],
];

const FLAGS = [
  '--leader-elect-lease-duration',
  `${LEASE_MS / 1000}s`,
  '--leader-elect-renew-deadline',
  `${RENEW_DEADLINE_MS / 1000}s`,
  '--leader-elect-retry-period',
  `${RETRY_MS / 1000}s`,
  '--drift-interval',
  `${DRIFT_MS / 1000}s`,
];

/** `GET /api/v1/leader`. */
interface LeaderView {
  identity: string;
  leading: boolean;
  leader: string | null;
  lease: string | null;
  since: string | null;
}

/** The Lease fields leader election owns, as the API server holds them. */
interface LeaseSpec {
  holder: string;
  transitions: number;
  renewTime: string | undefined;
  durationSeconds: number | undefined;
}

/** One replica: the built service in its own process group, listed for the environment's reaper. */
class Replica {
  readonly name: string;
  readonly process: ManagedProcess;
  readonly logFile: string;
  base = '';
  identity = '';

  constructor(name: string, env: KubeEnvironment, namespace: string) {
    this.name = name;
    this.logFile = join(env.stateDir, `${name}.log`);
    this.process = new ManagedProcess({
      name,
      // `env -i`: a clean environment (nothing of the test runner's), and POD_NAME so the
      // identity reads `<name>_<suffix>`. `env` execs node, so the pid stays the group leader's.
      command: '/usr/bin/env',
      args: [
        '-i',
        `PATH=${process.env.PATH ?? ''}`,
        `POD_NAME=${name}`,
        process.execPath,
        MAIN,
        ...kubernetesSourceArgs(env, namespace),
        '--leader-elect-resource-namespace',
        namespace,
        '--listen',
        '127.0.0.1:0',
        ...FLAGS,
      ],
      logFile: this.logFile,
      pidDir: join(env.stateDir, 'pids'),
    });
  }

  get alive(): boolean {
    return this.process.running;
  }

  async start(): Promise<void> {
    this.process.start();
    const port = await waitFor(`${this.name} to listen`, async () => {
      if (!this.process.running) throw new Error(this.process.describeFailure());
      return listeningPort(readFileSync(this.logFile, 'utf8'));
    });
    this.base = `http://127.0.0.1:${port}`;
    this.identity = (await this.leader()).identity;
    expect(this.identity.startsWith(`${this.name}_`)).toBe(true);
  }

  async get<T>(path: string, timeoutMs = 1_000): Promise<T> {
    const res = await fetch(`${this.base}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 200) throw new Error(`${this.name} ${path}: HTTP ${res.status}`);
    return (await res.json()) as T;
  }

  leader(timeoutMs = 1_000): Promise<LeaderView> {
    return this.get<LeaderView>('/api/v1/leader', timeoutMs);
  }

  signal(signal: NodeJS.Signals): void {
    const pid = this.process.pid;
    if (pid === undefined) throw new Error(`${this.name} has no pid`);
    process.kill(-pid, signal); // the process group: env exec'd node, nothing else is in it
  }

  /** Resolves with the time (ms) the exit was seen, polling every 10 ms. */
  async exited(timeoutMs = 15_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.process.running) {
      if (Date.now() > deadline) throw new Error(`${this.name} did not exit`);
      await sleep(10);
    }
    return Date.now();
  }
}

/** One Server-Sent Events stream of a replica, recorded with the time each event arrived. */
class EventRecorder {
  readonly events: Array<{ type: string; data: Record<string, unknown>; at: number }> = [];
  readonly #abort = new AbortController();
  #ended = false;

  static async open(replica: Replica, types: readonly string[]): Promise<EventRecorder> {
    const recorder = new EventRecorder();
    await recorder.#start(replica, types);
    return recorder;
  }

  get ended(): boolean {
    return this.#ended;
  }

  close(): void {
    this.#abort.abort();
  }

  /** Events of `type` (matching `where`) that arrived at or after index `from`. */
  find(
    type: string,
    where: (data: Record<string, unknown>) => boolean = () => true,
    from = 0,
  ): { index: number; at: number; data: Record<string, unknown> } | undefined {
    for (let index = from; index < this.events.length; index += 1) {
      const event = this.events[index]!;
      if (event.type === type && where(event.data)) return { index, ...event };
    }
    return undefined;
  }

  async #start(replica: Replica, types: readonly string[]): Promise<void> {
    const res = await fetch(`${replica.base}/api/v1/events?types=${types.join(',')}`, {
      signal: this.#abort.signal,
    });
    if (res.status !== 200 || !res.body) throw new Error(`${replica.name} events: ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    // The first chunk (`retry:` and a comment) is written once the bus subscription exists.
    const first = await reader.read();
    if (first.done) throw new Error(`${replica.name} events: the stream ended at once`);
    void (async () => {
      let buffer = first.value;
      try {
        for (;;) {
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            this.#parse(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
          const next = await reader.read();
          if (next.done) break;
          buffer += next.value;
        }
      } catch {
        // aborted by close(), or the replica went away
      } finally {
        this.#ended = true;
      }
    })();
  }

  #parse(block: string): void {
    const event = parseEventBlock(block);
    if (event) this.events.push({ ...event, at: Date.now() });
  }
}

/** What the sampler reads of a replica (a `Replica`, or a fake in the sampler's own test). */
interface Sampled {
  readonly name: string;
  readonly alive: boolean;
  readonly base: string;
  leader(): Promise<LeaderView>;
}

interface LeaseRead extends LeaseSpec {
  sentAt: number;
  receivedAt: number;
}

interface ViewRead {
  replica: string;
  view: LeaderView;
  sentAt: number;
  receivedAt: number;
}

interface Sample {
  lease: LeaseRead | undefined;
  views: ViewRead[];
}

/** The background check described at the top of the file; one per scenario. */
class LeadershipSampler {
  readonly samples: Sample[] = [];
  readonly violations: string[] = [];
  /** Samples with two "leading" answers whose terms need not have overlapped. */
  straddles = 0;
  readonly #stop = new AbortController();
  readonly #done: Promise<void>;

  constructor(
    private readonly replicas: () => readonly Sampled[],
    private readonly readLease: () => Promise<LeaseSpec | undefined>,
    /** When the test wrote the intruder's Lease, if it did. */
    private readonly intrudedAt: () => number | undefined,
    lifetimeMs: number,
  ) {
    this.#done = this.#run(Date.now() + lifetimeMs);
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#done;
  }

  async #run(until: number): Promise<void> {
    while (!this.#stop.signal.aborted && Date.now() < until) {
      const tick = Date.now();
      try {
        await this.#sample();
      } catch (error) {
        this.violations.push(`sampler failed: ${error}`);
      }
      const wait = tick + SAMPLE_MS - Date.now();
      if (wait > 0) await sleep(wait, undefined, { signal: this.#stop.signal }).catch(() => {});
    }
  }

  async #sample(): Promise<void> {
    let lease: LeaseRead | undefined;
    const leaseSentAt = Date.now();
    try {
      const spec = await this.readLease();
      if (spec) lease = { ...spec, sentAt: leaseSentAt, receivedAt: Date.now() };
    } catch {
      // the API server is restarting: this sample checks overlap only
    }
    // Only after the Lease read has been answered: see the holder check below.
    const views = await Promise.all(
      this.replicas()
        .filter((r) => r.alive && r.base !== '')
        .map(async (r): Promise<ViewRead | undefined> => {
          const sentAt = Date.now();
          try {
            const view = await r.leader();
            return { replica: r.name, view, sentAt, receivedAt: Date.now() };
          } catch {
            return undefined; // stopping, killed, or not listening yet
          }
        }),
    );
    const sample: Sample = { lease, views: views.filter((v) => v !== undefined) };
    this.samples.push(sample);
    this.#check(sample);
  }

  #check({ lease, views }: Sample): void {
    const leading = views.filter((v) => v.view.leading);
    for (const v of leading) {
      if (v.view.since === null) this.violations.push(`${v.replica} leads with since null`);
    }
    const since = (v: ViewRead): number => Date.parse(v.view.since ?? '');
    for (let i = 0; i < leading.length; i += 1) {
      for (let j = i + 1; j < leading.length; j += 1) {
        const a = leading[i]!;
        const b = leading[j]!;
        if (Math.max(since(a), since(b)) < Math.min(a.sentAt, b.sentAt)) {
          this.violations.push(
            `split brain: ${a.view.identity} (since ${a.view.since}) and ${b.view.identity} ` +
              `(since ${b.view.since}) both led at ${new Date(Math.min(a.sentAt, b.sentAt)).toISOString()}`,
          );
        } else {
          this.straddles += 1;
        }
      }
    }
    if (!lease) return;
    for (const v of leading) {
      // The Lease was read inside this replica's term: it must name the replica.
      if (!(since(v) < lease.sentAt) || lease.holder === v.view.identity) continue;
      const intruded = this.intrudedAt();
      const excused =
        lease.holder === INTRUDER &&
        intruded !== undefined &&
        v.sentAt <= intruded + RENEW_DEADLINE_MS + MARGIN_MS;
      if (!excused) {
        this.violations.push(
          `${v.view.identity} (since ${v.view.since}) reported leading at ` +
            `${new Date(v.sentAt).toISOString()}, but the Lease read at ` +
            `${new Date(lease.sentAt).toISOString()} names ${JSON.stringify(lease.holder)}`,
        );
      }
    }
  }
}

describe('leader election on a Lease, built service, real apiserver', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let kubelet: FakeKubelet;
  let namespace: string;
  let ca: Buffer;
  let sampler: LeadershipSampler | undefined;
  let intrudedAt: number | undefined;
  let started = 0;
  const replicas: Replica[] = [];
  const recorders: EventRecorder[] = [];
  const timings: Record<string, number> = {};

  const live = (): Replica[] => replicas.filter((r) => r.alive);

  /** One JSON call to the API server as the admin, with a timeout (restarts must not hang us). */
  const admin = (
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = 2_000,
  ): Promise<{ status: number; body: Record<string, unknown> }> =>
    new Promise((resolve, reject) => {
      const req = request(
        new URL(path, env.server),
        {
          method,
          ca,
          signal: AbortSignal.timeout(timeoutMs),
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
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${LEASE_NAME}`;

  const readLeaseObject = async (): Promise<Record<string, unknown> | undefined> => {
    const answer = await admin('GET', leasePath());
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw new Error(`GET Lease: HTTP ${answer.status}`);
    return answer.body;
  };

  const readLease = async (): Promise<LeaseSpec | undefined> => {
    const lease = await readLeaseObject();
    if (!lease) return undefined;
    const spec = (lease.spec ?? {}) as Record<string, unknown>;
    return {
      holder: (spec.holderIdentity as string | undefined) ?? '',
      transitions: (spec.leaseTransitions as number | undefined) ?? 0,
      renewTime: spec.renewTime as string | undefined,
      durationSeconds: spec.leaseDurationSeconds as number | undefined,
    };
  };

  const startReplica = async (): Promise<Replica> => {
    started += 1;
    const replica = new Replica(`pool-controller-${started}`, env, namespace);
    replicas.push(replica);
    await replica.start();
    return replica;
  };

  /** Tops the replicas up to three, after a scenario killed one. */
  const ensureReplicas = async (): Promise<void> => {
    const missing = REPLICAS - live().length;
    await Promise.all(Array.from({ length: missing }, () => startReplica()));
  };

  /** Views of every live replica that answers. */
  const views = async (): Promise<Array<{ replica: Replica; view: LeaderView }>> => {
    const answers = await Promise.all(
      live().map(async (replica) => {
        try {
          return { replica, view: await replica.leader() };
        } catch {
          return undefined;
        }
      }),
    );
    return answers.filter((a) => a !== undefined);
  };

  /** Exactly one live replica leads, and the Lease names it. */
  const waitForSoleLeader = (
    what: string,
    timeoutMs: number,
  ): Promise<{ replica: Replica; view: LeaderView; since: number }> =>
    waitFor(
      what,
      async () => {
        const leading = (await views()).filter((v) => v.view.leading);
        if (leading.length !== 1) return undefined;
        const [only] = leading;
        const lease = await readLease();
        if (lease?.holder !== only!.view.identity) return undefined;
        return { ...only!, since: Date.parse(only!.view.since!) };
      },
      timeoutMs,
    );

  /**
   * `/api/v1/cells` of every live replica, once all agree (but for `lastTransitionTime`, the local
   * time each replica saw a change) and serve the ids and aliveness expected.
   */
  const waitForSameCells = (what: string, expected: Array<[string, boolean]>): Promise<Cell[]> =>
    waitFor(what, async () => {
      const bodies = await Promise.all(
        live().map((r) => r.get<{ source: string; cells: Cell[] }>('/api/v1/cells')),
      );
      const normalised = bodies.map((b) =>
        JSON.stringify({
          source: b.source,
          // When each replica saw a transition is its own: times and their history differ.
          cells: b.cells.map(({ lastTransitionTime: _, transitions: __, ...rest }) => rest),
        }),
      );
      if (bodies.length !== REPLICAS || new Set(normalised).size !== 1) return undefined;
      const cells = bodies[0]!.cells;
      const seen = JSON.stringify(cells.map((c) => [c.id, c.alive]));
      return seen === JSON.stringify(expected) ? cells : undefined;
    });

  const openEvents = async (replica: Replica, types: string[]): Promise<EventRecorder> => {
    const recorder = await EventRecorder.open(replica, types);
    recorders.push(recorder);
    return recorder;
  };

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    ca = await readFile(env.caPath);
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('pool-le');
    await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE]);
    // Two alive cells of two pods each, there before any replica starts (the initial list).
    for (const group of [0, 1]) {
      for (const worker of [0, 1]) {
        await core.createNamespacedPod({ namespace, body: lwsPod('engine', group, worker, 2) });
        await kubelet.markRunning(
          namespace,
          worker === 0 ? `engine-${group}` : `engine-${group}-${worker}`,
        );
      }
    }
  });

  beforeEach(() => {
    sampler = new LeadershipSampler(live, readLease, () => intrudedAt, 150_000);
  });

  afterEach(async () => {
    for (const recorder of recorders.splice(0)) recorder.close();
    const finished = sampler;
    sampler = undefined;
    if (!finished) return;
    await finished.stop();
    const leaderSamples = finished.samples.filter((s) => s.views.some((v) => v.view.leading));
    console.log(
      `leadership sampler: ${finished.samples.length} samples (${leaderSamples.length} with a leader, ` +
        `${finished.samples.filter((s) => s.lease).length} with a Lease read), ` +
        `${finished.straddles} handover straddles, ${finished.violations.length} violations`,
    );
    expect(finished.violations).toEqual([]);
    expect(finished.samples.length).toBeGreaterThan(0);
  });

  afterAll(async () => {
    for (const recorder of recorders.splice(0)) recorder.close();
    await sampler?.stop();
    await Promise.all(replicas.map((r) => r.process.stop(5_000)));
    if (Object.keys(timings).length > 0) console.log('leader election timings (ms):', timings);
    await env?.stop();
  });

  it('the sampler is not vacuous: it fails on overlapping leaders and on a leader the Lease does not name', async () => {
    const fake = (name: string, since: () => string | null): Sampled => ({
      name,
      alive: true,
      base: 'fake',
      leader: async () => {
        const at = since();
        return { identity: name, leading: at !== null, leader: name, lease: 'fake', since: at };
      },
    });
    const longAgo = new Date(Date.now() - 10_000).toISOString();
    const lease = (holder: string) => async (): Promise<LeaseSpec> => ({
      holder,
      transitions: 0,
      renewTime: undefined,
      durationSeconds: LEASE_MS / 1000,
    });
    const run = async (
      fakes: Sampled[],
      holder: string,
      intruded?: number,
    ): Promise<LeadershipSampler> => {
      const probe = new LeadershipSampler(
        () => fakes,
        lease(holder),
        () => intruded,
        10_000,
      );
      await waitFor('two samples', async () => (probe.samples.length >= 2 ? true : undefined));
      await probe.stop();
      return probe;
    };

    const splitBrain = await run([fake('a', () => longAgo), fake('b', () => longAgo)], 'a');
    expect(splitBrain.violations.some((v) => v.startsWith('split brain: a'))).toBe(true);
    expect(splitBrain.violations.some((v) => v.startsWith('b (since') && v.endsWith('"a"'))).toBe(
      true,
    );
    // A term that began after the requests were sent (a handover between them) is not proof.
    const handover = await run(
      [fake('a', () => longAgo), fake('b', () => new Date(Date.now() + 50).toISOString())],
      'a',
    );
    expect(handover.violations).toEqual([]);
    expect(handover.straddles).toBeGreaterThanOrEqual(2);
    // The intruder excuses a leader only for the renew deadline (+ margin) after it was written.
    const fresh = await run([fake('a', () => longAgo)], INTRUDER, Date.now());
    expect(fresh.violations).toEqual([]);
    const stale = await run([fake('a', () => longAgo)], INTRUDER, Date.now() - 10_000);
    expect(stale.violations.length).toBeGreaterThanOrEqual(2);
    const quiet = await run([fake('a', () => null), fake('b', () => longAgo)], 'b');
    expect(quiet.violations).toEqual([]);
  });

  it('three replicas: exactly one leads, and all three serve the same cells', async () => {
    await ensureReplicas();
    // A third cell created while the replicas watch: one pod, not ready.
    await core.createNamespacedPod({ namespace, body: lwsPod('engine', 2, 0, 1) });
    await kubelet.markRunning(namespace, 'engine-2', { ready: false });

    const { replica: leader } = await waitForSoleLeader(
      'one of three replicas to lead',
      LEASE_MS + 2 * JITTERED_RETRY_MS + 10_000,
    );
    const followers = live().filter((r) => r !== leader);
    expect(followers).toHaveLength(2);
    await waitFor('the followers to observe the leader', async () => {
      const seen = await Promise.all(followers.map((f) => f.leader()));
      return seen.every((v) => !v.leading && v.leader === leader.identity) ? true : undefined;
    });

    const cells = await waitForSameCells('the three replicas to serve the same cells', ALL_CELLS);
    expect(cells.find((c) => c.id === 'engine-00002')?.whyNotAlive.map((r) => r.reason)).toEqual([
      'PodsNotReady',
    ]);

    // Only the leader acts.
    const coordinators = await Promise.all(
      live().map(async (r) => ({
        replica: r,
        view: await r.get<{ leading: boolean; acting: boolean }>('/api/v1/coordinator'),
      })),
    );
    for (const { replica, view } of coordinators) {
      expect(view, replica.name).toMatchObject({
        leading: replica === leader,
        acting: replica === leader,
      });
    }

    // Steady through several renewals and follower attempts.
    const until = Date.now() + 2 * JITTERED_RETRY_MS;
    while (Date.now() < until) {
      const leading = (await views()).filter((v) => v.view.leading).map((v) => v.replica);
      expect(leading).toEqual([leader]);
      await sleep(100);
    }
    const lease = await readLease();
    expect(lease).toMatchObject({ holder: leader.identity, durationSeconds: LEASE_MS / 1000 });
  });

  it('SIGTERM: the leader releases the Lease and a follower leads within about one retry period', async () => {
    await ensureReplicas();
    const { replica: leader } = await waitForSoleLeader('a leader', 30_000);
    const before = (await readLease())!;
    expect(before.holder).toBe(leader.identity);

    const termAt = Date.now();
    leader.signal('SIGTERM');
    const exitAt = await leader.exited();
    expect(leader.process.exitStatus).toEqual({ code: 0, signal: null });
    expect(readFileSync(leader.logFile, 'utf8')).toContain('"msg":"released leader lease"');
    const released = (await readLease())!;
    expect(released.holder).not.toBe(leader.identity);

    const next = await waitForSoleLeader(
      'a follower to take over',
      2 * RETRY_MS + MARGIN_MS + 5_000,
    );
    expect(next.replica).not.toBe(leader);
    timings['2 SIGTERM → exit'] = exitAt - termAt;
    timings['2 exit → new leader'] = next.since - exitAt;
    timings['2 SIGTERM → new leader'] = next.since - termAt;
    // Released, not expired: the next jittered attempt of a follower wins.
    expect(next.since - exitAt).toBeLessThanOrEqual(2 * RETRY_MS + MARGIN_MS);
    expect(next.since - termAt).toBeLessThan(LEASE_MS + MARGIN_MS);
    const after = (await readLease())!;
    expect(after.holder).toBe(next.replica.identity);
    expect(after.transitions).toBe(before.transitions + 1);
  });

  it('SIGKILL: a follower leads once the lease has expired, not before', async () => {
    await ensureReplicas();
    const { replica: leader } = await waitForSoleLeader('a leader', 30_000);
    const before = (await readLease())!;

    const killAt = Date.now();
    leader.signal('SIGKILL');
    await leader.exited();
    expect(leader.process.exitStatus?.signal).toBe('SIGKILL');
    // Nobody released it: the Lease still names the dead leader, last renewed just before.
    const orphaned = (await readLease())!;
    expect(orphaned.holder).toBe(leader.identity);
    const lastRenew = Date.parse(orphaned.renewTime!);
    expect(killAt - lastRenew).toBeLessThanOrEqual(RETRY_MS + STEP_DOWN_MARGIN_MS);

    const next = await waitForSoleLeader(
      'a follower to take over the expired lease',
      LEASE_MS + 2 * JITTERED_RETRY_MS + MARGIN_MS + 5_000,
    );
    expect(next.replica).not.toBe(leader);
    timings['3 last renewal → kill'] = killAt - lastRenew;
    timings['3 kill → new leader'] = next.since - killAt;
    // Followers judge expiry from when they observed the last renewal (after it was written).
    expect(next.since).toBeGreaterThanOrEqual(lastRenew + LEASE_MS - CLOCK_SLACK_MS);
    expect(next.since - killAt).toBeGreaterThanOrEqual(LEASE_MS - RETRY_MS - STEP_DOWN_MARGIN_MS);
    expect(next.since - killAt).toBeLessThanOrEqual(LEASE_MS + 2 * JITTERED_RETRY_MS + MARGIN_MS);
    const after = (await readLease())!;
    expect(after.holder).toBe(next.replica.identity);
    expect(after.transitions).toBe(before.transitions + 1);
  });

  it('a foreign holder: the leader stops acting within the renew deadline and campaigns again', async () => {
    await ensureReplicas();
    const { replica: leader } = await waitForSoleLeader('a leader', 30_000);
    const events = await openEvents(leader, [
      'leadership.lost',
      'leadership.acquired',
      'reconciliation.started',
      'reconciliation.completed',
    ]);
    // It acts (drift runs every 2 s), so a silence after the loss means something.
    await waitFor(
      'the leader to run a reconciliation',
      async () => (events.find('reconciliation.started') ? true : undefined),
      DRIFT_MS + MARGIN_MS + 2_000,
    );

    // Overwrite the Lease as another client would: optimistic, retried on a conflict.
    let intruderRecord: Record<string, unknown> | undefined;
    for (let attempt = 1; !intruderRecord; attempt += 1) {
      const lease = (await readLeaseObject())!;
      const spec = lease.spec as Record<string, unknown>;
      const stamp = formatMicroTime(new Date());
      intrudedAt = Date.now();
      const answer = await admin('PUT', leasePath(), {
        ...lease,
        spec: {
          ...spec,
          holderIdentity: INTRUDER,
          leaseDurationSeconds: LEASE_MS / 1000,
          acquireTime: stamp,
          renewTime: stamp,
          leaseTransitions: ((spec.leaseTransitions as number | undefined) ?? 0) + 1,
        },
      });
      if (answer.status === 200) intruderRecord = answer.body;
      else if (answer.status !== 409 || attempt >= 10)
        throw new Error(`PUT Lease: HTTP ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
    const putAt = intrudedAt!;

    const lost = await waitFor(
      'the leader to step down',
      async () => events.find('leadership.lost'),
      RENEW_DEADLINE_MS + MARGIN_MS + 5_000,
    );
    timings['4 intruder → step down'] = lost.at - putAt;
    expect(lost.at - putAt).toBeLessThanOrEqual(RENEW_DEADLINE_MS + STEP_DOWN_MARGIN_MS);
    expect(lost.data.identity).toBe(leader.identity);
    const view = await leader.leader();
    const coordinator = await leader.get<{ leading: boolean; acting: boolean }>(
      '/api/v1/coordinator',
    );
    // Unless it already won the Lease back (impossible this early: the intruder's lease runs).
    expect(view.leading).toBe(false);
    expect(coordinator).toMatchObject({ leading: false, acting: false });

    // Someone leads again once the intruder's lease expires (it never renews).
    const next = await waitForSoleLeader(
      'a replica to lead after the intruder',
      LEASE_MS + 2 * JITTERED_RETRY_MS + MARGIN_MS + 5_000,
    );
    timings['4 intruder → new leader'] = next.since - putAt;
    timings['4 new leader is the old one'] = next.replica === leader ? 1 : 0;
    expect(next.since).toBeGreaterThanOrEqual(putAt + LEASE_MS - CLOCK_SLACK_MS);
    expect(next.since - putAt).toBeLessThanOrEqual(LEASE_MS + 2 * JITTERED_RETRY_MS + MARGIN_MS);

    // Its coordinator stayed stopped while it did not lead: no reconciliation began between the
    // loss and its next term (or at least two drift intervals, if another replica won).
    if (next.replica !== leader) {
      await waitFor(
        'two drift intervals after the loss',
        async () => (Date.now() > lost.at + 2 * DRIFT_MS + 500 ? true : undefined),
        2 * DRIFT_MS + 5_000,
      );
    }
    const regained =
      next.replica === leader
        ? await waitFor('its own leadership.acquired', async () =>
            events.find('leadership.acquired', () => true, lost.index + 1),
          )
        : events.find('leadership.acquired', () => true, lost.index + 1);
    const quiet = events.events.slice(lost.index + 1, regained?.index);
    expect(quiet.filter((e) => e.type === 'reconciliation.started')).toEqual([]);
    expect(regained === undefined).toBe(next.replica !== leader);
    if (regained) {
      // Campaigning again: the old leader won; its coordinator starts again with the new term.
      await waitFor('the coordinator to act again', async () =>
        events.find('reconciliation.started', () => true, regained.index + 1) ? true : undefined,
      );
    }
  });

  it('an API server restart: afterwards exactly one leader, never two', async () => {
    await ensureReplicas();
    const { replica: leader } = await waitForSoleLeader('a leader', 30_000);
    const restartAt = Date.now();
    await env.restartApiserver();
    const backAt = Date.now();
    timings['5 apiserver restart'] = backAt - restartAt;
    const next = await waitForSoleLeader(
      'one leader after the restart',
      LEASE_MS + 2 * JITTERED_RETRY_MS + MARGIN_MS + 10_000,
    );
    timings['5 restarted → leader'] = Math.max(0, next.since - backAt);
    timings['5 leader changed'] = next.replica === leader ? 0 : 1;
    timings['5 leader kept its term through the restart'] = next.since < restartAt ? 1 : 0;
    // Steady again: the same single leader through several renewals.
    const until = Date.now() + 2 * JITTERED_RETRY_MS;
    while (Date.now() < until) {
      const leading = (await views()).filter((v) => v.view.leading).map((v) => v.replica);
      expect(leading).toEqual([next.replica]);
      await sleep(100);
    }
    await waitFor('every replica ready again', async () => {
      const ready = await Promise.all(
        live().map(async (r) => (await fetch(`${r.base}/readyz`)).status === 200),
      );
      return ready.every(Boolean) ? true : undefined;
    });
    await waitForSameCells('the replicas to agree on the cells after the restart', ALL_CELLS);
  });

  it("a cell change reaches every replica's stream, and only the leader reconciles", async () => {
    await ensureReplicas();
    const { replica: leader } = await waitForSoleLeader('a leader', 30_000);
    const types = [
      'cell.changed',
      'reconciliation.triggered',
      'reconciliation.started',
      'reconciliation.completed',
      'leadership.acquired',
      'leadership.lost',
    ];
    const streams = new Map<Replica, EventRecorder>();
    for (const replica of live()) streams.set(replica, await openEvents(replica, types));
    const followers = live().filter((r) => r !== leader);
    const cellId = 'engine-00001';
    const cellReason = `cell ${namespace}/${cellId} `;

    for (const [step, alive] of [
      [() => kubelet.markNotReady(namespace, 'engine-1-1'), false],
      [() => kubelet.markRunning(namespace, 'engine-1-1'), true],
    ] as const) {
      const from = new Map([...streams].map(([r, s]) => [r, s.events.length]));
      await step();
      for (const [replica, stream] of streams) {
        await waitFor(`${replica.name} to stream the cell turning alive=${alive}`, async () =>
          stream.find(
            'cell.changed',
            (d) => d.cell === cellId && d.alive === alive,
            from.get(replica),
          )
            ? true
            : undefined,
        );
      }
      const stream = streams.get(leader)!;
      const changed = stream.find(
        'cell.changed',
        (d) => d.cell === cellId && d.alive === alive,
        from.get(leader),
      )!;
      const started = await waitFor('the leader to start a reconciliation for it', async () =>
        stream.find(
          'reconciliation.started',
          (d) => (d.reasons as string[]).some((r) => r.startsWith(cellReason)),
          changed.index + 1,
        ),
      );
      const completed = await waitFor('the reconciliation to complete', async () =>
        stream.find('reconciliation.completed', (d) => d.id === started.data.id, started.index + 1),
      );
      expect(completed.data.result).toBe('success');
    }

    // Followers saw the changes and reconciled nothing; nobody's leadership changed meanwhile.
    for (const follower of followers) {
      const events = streams.get(follower)!.events;
      expect(events.filter((e) => e.type === 'cell.changed').length).toBeGreaterThanOrEqual(2);
      expect(events.filter((e) => e.type.startsWith('reconciliation.'))).toEqual([]);
    }
    for (const stream of streams.values()) {
      expect(stream.events.filter((e) => e.type.startsWith('leadership.'))).toEqual([]);
    }
    await waitForSameCells('the replicas to agree on the cells again', ALL_CELLS);
  });
});
