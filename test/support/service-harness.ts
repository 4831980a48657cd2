/**
 * A real `PoolService` and its Fastify app over a hand-driven pod source and a fake clock:
 * tests push pods as a reflector would and ask the app through `inject()`. Used by the route
 * and service tests.
 */
import type { FastifyInstance } from 'fastify';
import { buildServer, type ServerOptions } from '../../src/http/app.js';
import type { Logger, ObjectKey, SourceEvent } from '../../src/index.js';
import { type Pod, podKey } from '../../src/model/pod.js';
import type { PodSource } from '../../src/model/pod-source.js';
import type { PodSourceStats } from '../../src/model/pod-source-stats.js';
import type { Workload, WorkloadApiStatus, WorkloadSource } from '../../src/model/workload.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { assembleService, type SinkWiring } from '../../src/service/assemble.js';
import {
  type Leadership,
  type LeadershipHooks,
  LeaseLeadership,
} from '../../src/service/leadership.js';
import type { PoolService } from '../../src/service/pool-service.js';
import type { Sink } from '../../src/sinks/sink.js';
import { FakeClock } from './fake-clock.js';
import { FakeLeaseLock, type FakeLeaseStore } from './fake-lease-lock.js';
import { FakeSink } from './fake-sink.js';
import { FakeSource } from './fake-source.js';
import { finishes, until } from './until.js';

/** A pod source whose stream a test drives and whose stats it sets. */
export class DrivenPodSource implements PodSource {
  readonly fake = new FakeSource<Pod>();
  readonly source = this.fake.source;
  closes = 0;
  current: PodSourceStats = {
    phase: 'watching',
    healthy: true,
    cursor: '100',
    lists: 1,
    relists: {},
    watchOpens: 1,
    initialList: 'watch-list',
    watchListFallbacks: 0,
    initialEventsTimeouts: 0,
    stalledWatches: 0,
    events: {},
    droppedEvents: {},
    bytesDecoded: 0,
  };

  stats(): PodSourceStats {
    return this.current;
  }

  async close(): Promise<void> {
    this.closes += 1;
  }
}

/**
 * A workload source whose stream a test drives (LeaderWorkerSets as the LWS source would
 * deliver them) and whose API status it sets, telling the service as the real source does.
 */
export class DrivenWorkloadSource implements WorkloadSource {
  readonly fake = new FakeSource<Workload>();
  readonly source = this.fake.source;
  current: WorkloadApiStatus = { state: 'available', message: 'watching LeaderWorkerSets' };
  onStatus: ((status: WorkloadApiStatus) => void) | undefined;
  closes = 0;

  status(): WorkloadApiStatus {
    return this.current;
  }

  /** Sets the API's status and tells the service. */
  setStatus(status: WorkloadApiStatus): void {
    this.current = status;
    this.onStatus?.(status);
  }

  async close(): Promise<void> {
    this.closes += 1;
  }
}

/** A LeaderWorkerSet as the workload source delivers it: `ns/name`, `replicas` groups. */
export function workload(
  name: string,
  desiredCells: number,
  options: Partial<Omit<Workload, 'name' | 'desiredCells'>> = {},
): Workload {
  return {
    namespace: options.namespace ?? 'ns',
    name,
    uid: options.uid ?? `uid-${name}`,
    desiredCells,
    readyReplicas: options.readyReplicas ?? null,
    conditions: options.conditions ?? [],
  };
}

export const WALL_CLOCK_MS = Date.parse('2025-06-01T12:00:00Z');

export interface HarnessOptions {
  pods?: Pod[];
  adminToken?: string;
  /** Default true: start the loop and apply the initial replace. */
  start?: boolean;
  resyncPeriodMs?: number | null;
  /** Timeouts and the like for the app; its clock is the harness's fake one. */
  server?: Omit<ServerOptions, 'clock'>;
  /** Who acts; default: the service's own (this process alone, no Lease). Gets the harness clock. */
  leadership?: (hooks: LeadershipHooks, clock: FakeClock) => Leadership;
  /** The routing controller's sinks; default none. */
  sinks?: (wiring: SinkWiring) => Sink[];
  /** Default: the service's (60 s); `null` turns drift off. */
  driftIntervalMs?: number | null;
  watchStatePollMs?: number;
  logger?: Logger;
  maxEventStreams?: number;
  /** `--sink-allow-loopback`; default false. */
  sinkAllowLoopback?: boolean;
  /** Pools whose cells need a bootstrap port (`--sglang-router POOL=URL,role=prefill`). */
  prefillPools?: ReadonlySet<string>;
  /** The pools' workloads; default none (every pool's capacity `Unknown`). */
  workloads?: DrivenWorkloadSource;
}

/**
 * `HarnessOptions.leadership` as a replica running leader election on a fake Lease in `store`
 * (15 s lease, 10 s renew deadline, 2 s retry), on the harness's clock.
 */
export function leaseLeadership(
  store: FakeLeaseStore,
  options: { identity?: string; lease?: string } = {},
): NonNullable<HarnessOptions['leadership']> {
  return (hooks, clock) =>
    new LeaseLeadership({
      lock: new FakeLeaseLock(store, () => clock.now(), options.lease),
      identity: options.identity ?? 'a_1',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      hooks,
      clock,
      wallClock: () => new Date(WALL_CLOCK_MS + clock.now()),
    });
}

export interface Harness {
  app: FastifyInstance;
  service: PoolService;
  podSource: DrivenPodSource;
  clock: FakeClock;
  /** Pushes events into the open stream and lets the loop reconcile them. */
  push(...events: SourceEvent<Pod>[]): Promise<void>;
  /** Applies the initial replace and waits for the first reconciles. */
  start(pods?: Pod[]): Promise<void>;
  /**
   * Waits until the service did all it can without the clock or the test: the loop took every
   * pushed event and has nothing queued or in flight, and the routing coordinator is idle with
   * nothing about to begin, or runs an apply a `FakeSink` holds for the test.
   */
  atRest(): Promise<void>;
  close(): Promise<void>;
}

export function replaceWith(pods: readonly Pod[]): SourceEvent<Pod> {
  return { type: 'replace', objects: new Map<ObjectKey, Pod>(pods.map((p) => [podKey(p), p])) };
}

export function upsert(pod: Pod): SourceEvent<Pod> {
  return { type: 'upsert', key: podKey(pod), object: pod };
}

export function remove(pod: Pod): SourceEvent<Pod> {
  return { type: 'delete', key: podKey(pod), lastObject: pod };
}

const open: Harness[] = [];

export async function harness(options: HarnessOptions = {}): Promise<Harness> {
  const clock = new FakeClock();
  const podSource = new DrivenPodSource();
  const sinks: Sink[] = [];
  const makeSinks = options.sinks;
  const service = assembleService({
    podSource,
    sourceKind: 'kubernetes',
    labels: LWS_LABELS,
    portName: 'http',
    clock,
    wallClock: () => WALL_CLOCK_MS,
    resyncPeriodMs: options.resyncPeriodMs === undefined ? null : options.resyncPeriodMs,
    ...(options.adminToken !== undefined ? { adminToken: options.adminToken } : {}),
    ...(options.leadership
      ? { leadership: (hooks: LeadershipHooks) => options.leadership!(hooks, clock) }
      : {}),
    ...(makeSinks
      ? {
          sinks: (wiring: SinkWiring) => {
            const made = makeSinks(wiring);
            sinks.push(...made);
            return made;
          },
        }
      : {}),
    ...(options.driftIntervalMs !== undefined ? { driftIntervalMs: options.driftIntervalMs } : {}),
    ...(options.watchStatePollMs !== undefined
      ? { watchStatePollMs: options.watchStatePollMs }
      : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.maxEventStreams !== undefined ? { maxEventStreams: options.maxEventStreams } : {}),
    ...(options.sinkAllowLoopback !== undefined
      ? { sinkAllowLoopback: options.sinkAllowLoopback }
      : {}),
    ...(options.prefillPools ? { prefillPools: options.prefillPools } : {}),
    ...(options.workloads
      ? {
          workloads: ({ onStatus }) => {
            options.workloads!.onStatus = onStatus;
            return options.workloads!;
          },
        }
      : {}),
  });
  const app = await buildServer(service, { clock, ...options.server });
  const h: Harness = {
    app,
    service,
    podSource,
    clock,
    async push(...events) {
      podSource.fake.push(...events);
      await h.atRest();
    },
    async start(pods = []) {
      const started = service.start();
      await until(() => podSource.fake.awaitingPull, { what: 'the service to open its source' });
      podSource.fake.push(replaceWith(pods));
      await started;
      await h.atRest();
    },
    atRest() {
      return until(
        () => {
          const fake = podSource.fake;
          if (fake.openStreams > 0 && !fake.awaitingPull) return false;
          const loop = service.loopState();
          if (loop.queued.length > 0 || loop.inFlight) return false;
          const { state } = service.coordinator();
          if (!state.running) return state.pendingReasons.length === 0;
          return sinks.some((sink) => sink instanceof FakeSink && sink.holding);
        },
        { what: 'the service to come to rest' },
      );
    },
    async close() {
      await finishes(app.close(), { what: 'the Fastify app to close' });
      await finishes(service.stop(), { what: 'PoolService.stop()' });
    },
  };
  open.push(h);
  if (options.start ?? true) await h.start(options.pods ?? []);
  return h;
}

/** Closes every harness a test opened; call from `afterEach`. */
export async function closeAll(): Promise<void> {
  await Promise.all(open.splice(0).map((h) => h.close()));
}
