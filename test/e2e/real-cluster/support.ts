/**
 * What the real-cluster scenarios share: the lane itself (RealClusterLane: the environment, the
 * real controllers, a namespace, the watches and the built service, started and stopped in one
 * place), LeaderWorkerSets created and changed through the API as a user would, the cells a reader of the API's own pods would expect, and an audit of every
 * `cell.changed` event the service published, against everything the API ever said about the
 * pods and their StatefulSets (which incarnation of a group each pod belongs to).
 *
 * The expected view is derived here from the documented rule (docs/service.md, "Pools and
 * cells"), independently of src/: a cell is alive when every member is Ready, none is terminating
 * and the worker indices are exactly 0..size-1. Incarnations are LWS's own rule: a worker belongs to
 * the leader whose uid owns the worker's StatefulSet.
 */
import { createHash } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1Pod,
  type V1StatefulSet,
  Watch,
} from '@kubernetes/client-node';
import { type KubeEnvironment, startKubeEnvironment } from '../environment/index.js';
import {
  type RealCluster,
  type RealClusterOptions,
  startRealCluster,
} from '../environment/real-cluster.js';
import type { ReceivedEvent } from '../support-controller.js';
import {
  bindShippedRoles,
  kubernetesSourceArgs,
  LWS,
  type ServiceProcess,
  spawnService,
  waitFor,
} from '../support-service.js';
import { PodTimeline, type PodVersionAt } from './pod-timeline.js';

export const LWS_API = { group: 'leaderworkerset.x-k8s.io', version: 'v1' } as const;
/** How long the service may lag the API once the API has settled (issue 35). */
export const CONVERGE_WITHIN_MS = 5_000;
/** How long the real controllers get to settle after a change: kwok and GC on a loaded machine. */
export const SETTLE_TIMEOUT_MS = 90_000;
/** The engine container's serving port, named `http` (the service's default --port-name). */
export const ENGINE_PORT = 30000;

/** What a scenario may change in leaderWorkerSet()'s LWS. */
export interface LeaderWorkerSetOptions {
  /** A readiness gate's condition type, in the (shared) pod template of leaders and workers. */
  readonly readinessGate?: string;
  /** LWS's restart policy; default RecreateGroupOnPodRestart. */
  readonly restartPolicy?: 'RecreateGroupOnPodRestart' | 'None';
  /** The engine's `http` containerPort; default ENGINE_PORT. */
  readonly port?: number;
}

/** The containerPort named `http` of `pod` (the service's default --port-name), if any. */
export function httpPort(pod: V1Pod): number | undefined {
  for (const container of pod.spec?.containers ?? []) {
    const port = container.ports?.find((p) => p.name === 'http');
    if (port) return port.containerPort;
  }
  return undefined;
}

/** The pod template of LWS `name`'s leaders and workers at `revision`, one `http` container. */
function podTemplate(name: string, revision: string, options: LeaderWorkerSetOptions) {
  return {
    metadata: { labels: { app: name }, annotations: { 'e2e/revision': revision } },
    spec: {
      containers: [
        {
          name: 'engine',
          image: 'registry.invalid/sglang:e2e',
          ports: [{ name: 'http', containerPort: options.port ?? ENGINE_PORT }],
        },
      ],
      ...(options.readinessGate
        ? { readinessGates: [{ conditionType: options.readinessGate }] }
        : {}),
    },
  };
}

/** A LeaderWorkerSet of `replicas` groups of `size` pods, one `http` container each. */
export function leaderWorkerSet(
  name: string,
  replicas: number,
  size: number,
  revision = 'a',
  options: LeaderWorkerSetOptions = {},
): Record<string, unknown> {
  const template = podTemplate(name, revision, options);
  return {
    apiVersion: `${LWS_API.group}/${LWS_API.version}`,
    kind: 'LeaderWorkerSet',
    metadata: { name },
    spec: {
      replicas,
      leaderWorkerTemplate: {
        size,
        restartPolicy: options.restartPolicy ?? 'RecreateGroupOnPodRestart',
        workerTemplate: template,
      },
      rolloutStrategy: {
        type: 'RollingUpdate',
        rollingUpdateConfiguration: { maxUnavailable: 1, maxSurge: 0 },
      },
      startupPolicy: 'LeaderCreated',
    },
  };
}

/** The LWS API as the tests use it: create, scale, roll, delete, read status. */
export class LwsClient {
  readonly #custom: CustomObjectsApi;
  readonly #namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#namespace = namespace;
  }

  async create(body: Record<string, unknown>): Promise<void> {
    await this.#custom.createNamespacedCustomObject({
      ...LWS_API,
      namespace: this.#namespace,
      plural: 'leaderworkersets',
      body,
    });
  }

  async get(name: string): Promise<{ spec: Record<string, unknown>; status?: LwsStatus }> {
    return (await this.#custom.getNamespacedCustomObject({
      ...LWS_API,
      namespace: this.#namespace,
      plural: 'leaderworkersets',
      name,
    })) as { spec: Record<string, unknown>; status?: LwsStatus };
  }

  /** Changes the LWS by a JSON merge patch (replicas, or the template for a rolling update). */
  async patch(name: string, patch: Record<string, unknown>): Promise<void> {
    const lws = await this.get(name);
    const merged = merge(lws as unknown as Record<string, unknown>, patch);
    await this.#custom.replaceNamespacedCustomObject({
      ...LWS_API,
      namespace: this.#namespace,
      plural: 'leaderworkersets',
      name,
      body: merged,
    });
  }

  /**
   * Starts a rolling update of LWS `name` to the pod template leaderWorkerSet() makes for
   * `revision` and `options` (a new port, say).
   */
  async roll(name: string, revision: string, options: LeaderWorkerSetOptions = {}): Promise<void> {
    await this.patch(name, {
      spec: { leaderWorkerTemplate: { workerTemplate: podTemplate(name, revision, options) } },
    });
  }

  async delete(name: string): Promise<void> {
    await this.#custom.deleteNamespacedCustomObject({
      ...LWS_API,
      namespace: this.#namespace,
      plural: 'leaderworkersets',
      name,
      propagationPolicy: 'Background',
    });
  }
}

function merge(base: Record<string, unknown>, patch: Record<string, unknown>) {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const current = out[key];
    out[key] =
      value &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      current &&
      typeof current === 'object'
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

export interface LwsStatus {
  readyReplicas?: number;
  replicas?: number;
  updatedReplicas?: number;
  conditions?: Array<{ type: string; status: string }>;
}

/** A cell as compared: id, alive, and its members' names in order. */
export interface CellView {
  id: string;
  alive: boolean;
  members: string[];
}

const isReady = (pod: V1Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The cells a reader of `pods` expects, by the documented rule, sorted by id. Pods without the LWS
 * name label are not in any pool.
 */
export function expectedCells(pods: readonly V1Pod[]): CellView[] {
  const cells = new Map<string, V1Pod[]>();
  for (const pod of pods) {
    const labels = pod.metadata?.labels ?? {};
    const pool = labels[`${LWS}/name`];
    const group = labels[`${LWS}/group-index`];
    if (!pool || group === undefined) continue;
    const id = `${pool}-${group.padStart(5, '0')}`;
    cells.set(id, [...(cells.get(id) ?? []), pod]);
  }
  const index = (pod: V1Pod): number => Number(pod.metadata?.labels?.[`${LWS}/worker-index`] ?? 0);
  return [...cells.entries()]
    .map(([id, members]) => {
      members.sort(
        (a, b) => index(a) - index(b) || a.metadata!.name!.localeCompare(b.metadata!.name!),
      );
      const size = Number(members[0]?.metadata?.annotations?.[`${LWS}/size`] ?? members.length);
      const indices = members.map(index);
      const exact = indices.length === size && indices.every((value, i) => value === i);
      const alive = exact && members.every((p) => isReady(p) && !p.metadata?.deletionTimestamp);
      return { id, alive, members: members.map((p) => p.metadata!.name!) };
    })
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The service's cells of `namespace` in the same shape. */
export async function servedCells(base: string): Promise<CellView[]> {
  const res = await fetch(`${base}/api/v1/cells`);
  const body = (await res.json()) as {
    cells: Array<{ id: string; alive: boolean; members: Array<{ name: string }> }>;
  };
  return body.cells
    .map((c) => ({ id: c.id, alive: c.alive, members: c.members.map((m) => m.name) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Waits until the API has settled — `settled(pods)` holds and the pods stay the same for a
 * moment — then until the service serves the cells those pods imply, and resolves to how long the
 * service took (ms). Throws with both views when the service has not matched within
 * CONVERGE_WITHIN_MS.
 */
export async function expectConverged(
  kubeConfig: KubeConfig,
  namespace: string,
  base: string,
  settled: (pods: V1Pod[]) => boolean,
): Promise<number> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const list = async (): Promise<V1Pod[]> => (await core.listNamespacedPod({ namespace })).items;
  let expected: CellView[] = [];
  await waitFor(
    'the real controllers to settle',
    async () => {
      const pods = await list();
      if (!settled(pods)) return undefined;
      expected = expectedCells(pods);
      return true;
    },
    SETTLE_TIMEOUT_MS,
    200,
  );
  const started = Date.now();
  let served: CellView[] = [];
  for (;;) {
    served = await servedCells(base);
    const now = expectedCells(await list());
    if (JSON.stringify(now) !== JSON.stringify(expected)) {
      // The API moved on (a late controller action): compare against what it says now.
      expected = now;
    }
    if (JSON.stringify(served) === JSON.stringify(expected)) return Date.now() - started;
    if (Date.now() - started > CONVERGE_WITHIN_MS) {
      throw new Error(
        `the service's cells did not match the API's pods within ${CONVERGE_WITHIN_MS} ms\n` +
          `expected: ${JSON.stringify(expected)}\nserved:   ${JSON.stringify(served)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `groups` groups of `size` pods of LWS `name`, all Running and Ready, none terminating. */
export function allReady(name: string, groups: number, size: number) {
  return (pods: V1Pod[]): boolean => {
    const mine = pods.filter((p) => p.metadata?.labels?.[`${LWS}/name`] === name);
    return (
      mine.length === groups * size &&
      mine.every((p) => isReady(p) && !p.metadata?.deletionTimestamp && p.status?.podIP)
    );
  };
}

/** Every pod of LWS `name` is of template revision `revision`. */
export function allAtRevision(name: string, revision: string) {
  return (pods: V1Pod[]): boolean =>
    pods
      .filter((p) => p.metadata?.labels?.[`${LWS}/name`] === name)
      .every((p) => p.metadata?.annotations?.['e2e/revision'] === revision);
}

/** No pod of LWS `name` is left. */
export function noneOf(name: string) {
  return (pods: V1Pod[]): boolean =>
    !pods.some((p) => p.metadata?.labels?.[`${LWS}/name`] === name);
}

/** Pod `name` exists with a uid other than `before`: the API replaced it. */
export function replaced(name: string, before: string | undefined) {
  return (pods: V1Pod[]): boolean =>
    pods.some((p) => p.metadata?.name === name && p.metadata.uid !== before);
}

interface PodVersion {
  name: string;
  uid: string;
  restarts: number;
  deleting: boolean;
  /** The uid of the StatefulSet that owns the pod. */
  ownerUid?: string;
  labels: Record<string, string>;
}

/**
 * Everything the API said about the pods and StatefulSets of one namespace, from two watches
 * opened before the first LWS: every version of every pod, and each StatefulSet's owner.
 */
export class ClusterHistory {
  readonly podVersions: PodVersion[] = [];
  /** StatefulSet uid → the uid of its owner (for a worker StatefulSet: the leader pod). */
  readonly setOwners = new Map<string, string>();
  /** Leader pod uids seen per leader name: a second uid is a leader replacement. */
  readonly leaderUids = new Map<string, Set<string>>();
  readonly #aborts: AbortController[] = [];
  readonly #kubeConfig: KubeConfig;
  readonly #namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#kubeConfig = kubeConfig;
    this.#namespace = namespace;
  }

  /** Opens both watches; resolves once both are established. */
  async start(): Promise<void> {
    const watch = new Watch(this.#kubeConfig);
    const onPod = (_type: string, pod: V1Pod): void => this.#recordPod(pod);
    const onSet = (_type: string, set: V1StatefulSet): void => {
      const owner = set.metadata?.ownerReferences?.[0]?.uid;
      if (set.metadata?.uid && owner) this.setOwners.set(set.metadata.uid, owner);
    };
    const done = (): void => {};
    this.#aborts.push(
      await watch.watch(`/api/v1/namespaces/${this.#namespace}/pods`, {}, onPod, done),
      await watch.watch(
        `/apis/apps/v1/namespaces/${this.#namespace}/statefulsets`,
        {},
        onSet,
        done,
      ),
    );
  }

  /** Records one version of a pod, and its uid as a leader's when it is one. */
  #recordPod(pod: V1Pod): void {
    const name = pod.metadata?.name;
    const uid = pod.metadata?.uid;
    if (!name || !uid) return;
    const restarts = (pod.status?.containerStatuses ?? []).reduce(
      (sum, c) => sum + (c.restartCount ?? 0),
      0,
    );
    const labels = pod.metadata?.labels ?? {};
    const owner = pod.metadata?.ownerReferences?.find((o) => o.kind === 'StatefulSet')?.uid;
    this.podVersions.push({
      name,
      uid,
      restarts,
      deleting: Boolean(pod.metadata?.deletionTimestamp),
      labels,
      ...(owner ? { ownerUid: owner } : {}),
    });
    if ((labels[`${LWS}/worker-index`] ?? '0') === '0' && labels[`${LWS}/name`]) {
      const uids = this.leaderUids.get(name) ?? new Set<string>();
      uids.add(uid);
      this.leaderUids.set(name, uids);
    }
  }

  /** Leader replacements seen so far: every leader uid after a name's first. */
  leaderReplacements(): number {
    let count = 0;
    for (const uids of this.leaderUids.values()) count += uids.size - 1;
    return count;
  }

  stop(): void {
    for (const abort of this.#aborts) abort.abort();
  }
}

const generationOf = (members: ReadonlyArray<{ name: string; uid: string; restarts: number }>) =>
  createHash('sha256')
    .update(members.map((m) => `${m.name}:${m.uid}:${m.restarts}:false`).join('\n'))
    .digest('hex')
    .slice(0, 16);

/** The outcome of auditing every alive `cell.changed` event against the cluster's history. */
export interface IncarnationAudit {
  /** Alive publications audited (members identified by their generation). */
  audited: number;
  /** Alive publications whose members could not be identified from the history. */
  unidentified: string[];
  /** Alive publications with a worker of another leader's incarnation, described. */
  stale: string[];
}

/**
 * For each `cell.changed` event published alive, finds the members it was made of (the
 * combination of pod versions whose generation is the event's) and checks LWS's rule: each
 * worker's StatefulSet is owned by the leader's uid. `sizes` gives each pool's group size.
 */
export function auditIncarnations(
  events: readonly ReceivedEvent[],
  history: ClusterHistory,
  sizes: ReadonlyMap<string, number>,
): IncarnationAudit {
  const audit: IncarnationAudit = { audited: 0, unidentified: [], stale: [] };
  const versionsByName = new Map<string, Map<string, PodVersion>>();
  for (const v of history.podVersions) {
    if (v.deleting) continue;
    const byKey = versionsByName.get(v.name) ?? new Map<string, PodVersion>();
    byKey.set(`${v.uid}:${v.restarts}`, v);
    versionsByName.set(v.name, byKey);
  }
  for (const event of events) {
    if (event.type !== 'cell.changed' || event.data.alive !== true) continue;
    const pool = String(event.data.pool);
    const cell = String(event.data.cell);
    const size = sizes.get(pool);
    if (size === undefined) continue;
    const group = Number(cell.slice(pool.length + 1));
    const names = Array.from({ length: size }, (_, w) =>
      w === 0 ? `${pool}-${group}` : `${pool}-${group}-${w}`,
    );
    const candidates = names.map((n) => [...(versionsByName.get(n)?.values() ?? [])]);
    const found = findCombination(candidates, String(event.data.generation));
    if (!found) {
      audit.unidentified.push(`${cell} generation ${event.data.generation}`);
      continue;
    }
    audit.audited += 1;
    const leader = found[0]!;
    for (const worker of found.slice(1)) {
      const owner = worker.ownerUid ? history.setOwners.get(worker.ownerUid) : undefined;
      if (owner !== leader.uid) {
        audit.stale.push(
          `${cell} published alive with ${worker.name} (uid ${worker.uid}) whose StatefulSet is ` +
            `owned by ${owner ?? 'an unknown owner'}, not by leader ${leader.name} (uid ${leader.uid})`,
        );
      }
    }
  }
  return audit;
}

function findCombination(candidates: PodVersion[][], generation: string): PodVersion[] | undefined {
  const pick: PodVersion[] = [];
  const search = (i: number): PodVersion[] | undefined => {
    if (i === candidates.length) return generationOf(pick) === generation ? [...pick] : undefined;
    for (const version of candidates[i]!) {
      pick.push(version);
      const found = search(i + 1);
      pick.pop();
      if (found) return found;
    }
    return undefined;
  };
  return search(0);
}

/** The StatefulSets of `namespace` (the leader set and one worker set per group). */
export async function statefulSets(kubeConfig: KubeConfig, namespace: string) {
  return (await kubeConfig.makeApiClient(AppsV1Api).listNamespacedStatefulSet({ namespace })).items;
}

/** creationTimestamp's resolution, plus a margin for the two clocks' rounding. */
const INCARNATION_MIN_AGE_MS = 1_100;

/** What a scenario file chooses of its lane. */
export interface RealClusterLaneOptions {
  /** The namespace's prefix (the environment adds a suffix). */
  readonly namespace: string;
  /** The shipped Roles bound to the service's account in that namespace. */
  readonly roles: readonly URL[];
  /** Where the kwok nodes take pod IPs from (startRealCluster's option; default loopback). */
  readonly podRange?: RealClusterOptions['podRange'];
  /** Called with every pod version the timeline receives, from its first. */
  readonly onPodVersion?: (version: PodVersionAt) => void;
}

/**
 * One real-cluster lane for one scenario file: the e2e environment (apiserver with its watch
 * cache, as the scenarios' watches need), the real controllers beside it, a namespace with the
 * service's Roles bound, both watches of the namespace (PodTimeline and ClusterHistory, opened
 * before the first LWS so no version is missed; each file judges by the one it needs, and a watch
 * is nothing beside the controllers' own), and then — startService() — the built service.
 * stop() undoes all of it, in reverse, whatever was reached.
 */
export class RealClusterLane {
  readonly env: KubeEnvironment;
  readonly cluster: RealCluster;
  readonly namespace: string;
  readonly core: CoreV1Api;
  readonly lws: LwsClient;
  readonly timeline: PodTimeline;
  readonly history: ClusterHistory;
  #service: ServiceProcess | undefined;
  #base = '';

  private constructor(env: KubeEnvironment, cluster: RealCluster, namespace: string) {
    this.env = env;
    this.cluster = cluster;
    this.namespace = namespace;
    this.core = env.kubeConfig.makeApiClient(CoreV1Api);
    this.lws = new LwsClient(env.kubeConfig, namespace);
    this.timeline = new PodTimeline(env.kubeConfig, namespace);
    this.history = new ClusterHistory(env.kubeConfig, namespace);
  }

  /** Starts everything but the service; on a failure, stops what it started and throws. */
  static async start(options: RealClusterLaneOptions): Promise<RealClusterLane> {
    const env = await startKubeEnvironment({ watchCache: true });
    let cluster: RealCluster | undefined;
    let lane: RealClusterLane | undefined;
    try {
      cluster = await startRealCluster(env, options.podRange ? { podRange: options.podRange } : {});
      const namespace = await env.createNamespace(options.namespace);
      await bindShippedRoles(env, namespace, options.roles);
      lane = new RealClusterLane(env, cluster, namespace);
      if (options.onPodVersion) lane.timeline.onVersion(options.onPodVersion);
      await lane.timeline.start();
      await lane.history.start();
      return lane;
    } catch (error) {
      lane?.timeline.stop();
      lane?.history.stop();
      await cluster?.stop();
      await env.stop();
      throw error;
    }
  }

  /**
   * Spawns the built service on the lane's namespace (the unprivileged kubeconfig) with `args`
   * after the source's, and resolves with its base URL once it listens.
   */
  async startService(args: readonly string[] = []): Promise<string> {
    this.#service = spawnService([...kubernetesSourceArgs(this.env, this.namespace), ...args]);
    this.#base = await this.#service.listening();
    return this.#base;
  }

  /** The service startService() spawned. */
  get service(): ServiceProcess {
    if (!this.#service) throw new Error('the lane has no service: call startService() first');
    return this.#service;
  }

  /** The service's `http://127.0.0.1:<port>`. */
  get base(): string {
    return this.#base;
  }

  /**
   * Waits until the API settled by `settled` and the service serves the cells its pods imply
   * (expectConverged), asserts every pod IP is in the lane's range, and resolves to the service's
   * lag (ms).
   */
  async converged(settled: (pods: V1Pod[]) => boolean): Promise<number> {
    const lag = await expectConverged(this.env.kubeConfig, this.namespace, this.#base, settled);
    await this.cluster.assertPodIpsInRange(this.namespace);
    return lag;
  }

  /**
   * The membership rule tells incarnations apart by `creationTimestamp`, whose resolution is one
   * second, so it cannot see a stale worker of an incarnation that lived under a second
   * (docs/alignment.md, StaleMember): before replacing groups, wait until every pod of LWS `name`
   * is a second old, so the lane tests the guarantee the rule makes and no more.
   */
  async waitUntilASecondOld(name: string): Promise<void> {
    await waitFor('the pods to be a second old', async () => {
      const pods = (
        await this.core.listNamespacedPod({
          namespace: this.namespace,
          labelSelector: `${LWS}/name=${name}`,
        })
      ).items;
      const newest = Math.max(
        ...pods.map((p) => new Date(p.metadata?.creationTimestamp ?? 0).getTime()),
      );
      return Date.now() - newest >= INCARNATION_MIN_AGE_MS ? true : undefined;
    });
  }

  /** Deletes pod `name` with background propagation, as `kubectl delete pod` does. */
  async deletePod(name: string): Promise<void> {
    await this.core.deleteNamespacedPod({
      namespace: this.namespace,
      name,
      propagationPolicy: 'Background',
    });
  }

  /** The uid of pod `name`, or undefined when it does not exist. */
  async podUid(name: string): Promise<string | undefined> {
    try {
      return (await this.core.readNamespacedPod({ namespace: this.namespace, name })).metadata?.uid;
    } catch {
      return undefined;
    }
  }

  /** The namespace's pods as the API holds them now. */
  async pods(): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace: this.namespace })).items;
  }

  /** The leader pods (worker index 0) of LWS `name` as the API holds them now. */
  async leaders(name: string): Promise<V1Pod[]> {
    const { items } = await this.core.listNamespacedPod({
      namespace: this.namespace,
      labelSelector: `${LWS}/name=${name}`,
    });
    return items.filter((p) => p.metadata?.labels?.[`${LWS}/worker-index`] === '0');
  }

  /** Stops the watches, kills the service, then stops the controllers and the environment. */
  async stop(): Promise<void> {
    this.timeline.stop();
    this.history.stop();
    const child = this.#service?.child;
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await this.cluster.stop();
    await this.env.stop();
  }
}
