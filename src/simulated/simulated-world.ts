/**
 * The pods of the simulated source and the kubelet-like operations that change them.
 *
 * Each operation changes the world and returns the `SourceEvent`s a watch would have delivered
 * for it, so the simulated source exercises exactly the path a real cluster does: store, queue,
 * reconcile. Every event carries a fresh pod object: the store keeps what it is given, so a pod
 * already handed out is never mutated.
 */
import type { ContainerStatus, Pod, PodCondition } from '../model/pod.js';
import type { PoolLabels } from '../pools/labels.js';
import type { ObjectKey, SourceEvent } from '../runtime/source-event.js';

/**
 * The store key of a simulated pod, `namespace/name`: the same key the Kubernetes source uses
 * (client-go's `MetaNamespaceKeyFunc`), written here because pools may import only types from
 * src/kubernetes.
 */
function podKey(pod: Pod): ObjectKey {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** One pool the simulation creates: `cells` cells of `size` pods each. */
export interface SimulatedPoolSpec {
  name: string;
  cells: number;
  size: number;
  /** The serving port the leader's container declares under the configured port name. */
  containerPort?: number;
}

/** The watch event type a change would arrive as, for the source's per-type counters. */
type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * One change to the world as the source delivers it: the event for the loop, and the watch type it
 * would have arrived as, for the source's per-type counters.
 */
export interface WorldChange {
  type: WatchEventType;
  event: SourceEvent<Pod>;
}

type ContainerState = ContainerStatus['state'];

interface SimPod {
  pool: string;
  group: number;
  worker: number;
  size: number;
  containerPort: number;
  name: string;
  uid: string;
  resourceVersion: number;
  node?: string;
  ip?: string;
  running: boolean;
  ready: boolean;
  restarts: number;
  deletionTimestamp?: string;
  startedAt?: string;
}

/**
 * What shapes the simulated pods: the labels and port name the service is configured with, so a
 * simulated pod is read by exactly the rules a real one is.
 */
interface SimulatedWorldOptions {
  labels: PoolLabels;
  namespace: string;
  portName: string;
  /** Epoch ms, for timestamps inside pods (start times, deletion timestamps). */
  wallClock: () => number;
}

/** Nodes the simulated pods are spread over, round robin. */
const SIMULATED_NODE_COUNT = 4;

/** The port SGLang serves on by default, so a simulated engine's address looks like a real one. */
const DEFAULT_SIMULATED_PORT = 30000;

/** LWS's pod names: the leader is `<lws>-<group>`, worker i is `<lws>-<group>-<i>`. */
export function simulatedPodName(pool: string, group: number, worker: number): string {
  return worker === 0 ? `${pool}-${group}` : `${pool}-${group}-${worker}`;
}

/**
 * The mutable world behind the simulated source: kubelet-like operations (create a cell, start,
 * become ready, restart a container, terminate, remove) that each return the watch events they
 * cause. It holds compact records and renders a fresh `Pod` per event, since the store keeps what
 * it is given.
 */
export class SimulatedWorld {
  readonly #pods = new Map<string, SimPod>();
  readonly #options: SimulatedWorldOptions;
  #uidSeq = 0;
  #ipSeq = 0;
  #nodeSeq = 0;
  #resourceVersion = 0;

  constructor(options: SimulatedWorldOptions) {
    this.#options = options;
  }

  /** The latest resourceVersion handed out: the stats' cursor. */
  get resourceVersion(): number {
    return this.#resourceVersion;
  }

  get podCount(): number {
    return this.#pods.size;
  }

  /**
   * Every pod now, keyed like the reflector keys them (`namespace/name`). Rendered in slices of
   * `sliceSize` pods with `yieldBetween` awaited between them: a real source decodes a LIST in
   * its worker thread, and a large simulated world must not block the event loop in its stead.
   */
  async snapshot(
    sliceSize: number,
    yieldBetween: () => Promise<void>,
  ): Promise<Map<ObjectKey, Pod>> {
    const objects = new Map<ObjectKey, Pod>();
    const pods = [...this.#pods.values()];
    for (let i = 0; i < pods.length; i += 1) {
      if (i > 0 && i % sliceSize === 0) await yieldBetween();
      const rendered = this.#render(pods[i]!);
      objects.set(podKey(rendered), rendered);
    }
    return objects;
  }

  /** Creates all pods of one cell, unscheduled (`Pending`, no node, no IP). */
  createCell(spec: SimulatedPoolSpec, group: number): WorldChange[] {
    const changes: WorldChange[] = [];
    for (let worker = 0; worker < spec.size; worker += 1) {
      const name = simulatedPodName(spec.name, group, worker);
      if (this.#pods.has(name)) continue;
      const pod: SimPod = {
        pool: spec.name,
        group,
        worker,
        size: spec.size,
        containerPort: spec.containerPort ?? DEFAULT_SIMULATED_PORT,
        name,
        uid: this.#nextUid(),
        resourceVersion: 0,
        running: false,
        ready: false,
        restarts: 0,
      };
      this.#pods.set(name, pod);
      changes.push(this.#emit(pod, 'ADDED'));
    }
    return changes;
  }

  /** Scheduled, IP assigned, containers running but not yet passing readiness. */
  start(names: readonly string[]): WorldChange[] {
    return this.#change(names, (pod) => {
      if (pod.running) return false;
      pod.node = `sim-node-${this.#nodeSeq++ % SIMULATED_NODE_COUNT}`;
      pod.ip = this.#nextIp();
      pod.running = true;
      pod.startedAt = new Date(this.#options.wallClock()).toISOString();
      return true;
    });
  }

  /** The readiness probe passes. */
  ready(names: readonly string[]): WorldChange[] {
    return this.#change(names, (pod) => {
      if (!pod.running || pod.ready || pod.deletionTimestamp) return false;
      pod.ready = true;
      return true;
    });
  }

  /** A container crashed and the kubelet restarted it: the count goes up, readiness drops. */
  restartContainer(names: readonly string[]): WorldChange[] {
    return this.#change(names, (pod) => {
      if (!pod.running) return false;
      pod.restarts += 1;
      pod.ready = false;
      pod.startedAt = new Date(this.#options.wallClock()).toISOString();
      return true;
    });
  }

  /** A graceful delete began: deletion timestamp set, the endpoint controller would drop it. */
  terminate(names: readonly string[]): WorldChange[] {
    return this.#change(names, (pod) => {
      if (pod.deletionTimestamp) return false;
      pod.deletionTimestamp = new Date(this.#options.wallClock()).toISOString();
      pod.ready = false;
      return true;
    });
  }

  /** The grace period ended: the pod object is gone. */
  remove(names: readonly string[]): WorldChange[] {
    const changes: WorldChange[] = [];
    for (const name of names) {
      const pod = this.#pods.get(name);
      if (!pod) continue;
      this.#pods.delete(name);
      pod.resourceVersion = ++this.#resourceVersion;
      const lastObject = this.#render(pod);
      changes.push({
        type: 'DELETED',
        event: { type: 'delete', key: podKey(lastObject), lastObject },
      });
    }
    return changes;
  }

  /** Whether a pod of this name exists. */
  has(name: string): boolean {
    return this.#pods.has(name);
  }

  /** Names of the pods of one cell that exist now, leader first. */
  cellPods(pool: string, group: number): string[] {
    return [...this.#pods.values()]
      .filter((p) => p.pool === pool && p.group === group)
      .sort((a, b) => a.worker - b.worker)
      .map((p) => p.name);
  }

  /** Puts a whole cell straight into the Ready state (no story), for large static worlds. */
  createReadyCell(spec: SimulatedPoolSpec, group: number): void {
    this.createCell(spec, group);
    const names = Array.from({ length: spec.size }, (_, worker) =>
      simulatedPodName(spec.name, group, worker),
    );
    this.start(names);
    this.ready(names);
  }

  #change(names: readonly string[], mutate: (pod: SimPod) => boolean): WorldChange[] {
    const changes: WorldChange[] = [];
    for (const name of names) {
      const pod = this.#pods.get(name);
      if (pod && mutate(pod)) changes.push(this.#emit(pod, 'MODIFIED'));
    }
    return changes;
  }

  #emit(pod: SimPod, type: 'ADDED' | 'MODIFIED'): WorldChange {
    pod.resourceVersion = ++this.#resourceVersion;
    const object = this.#render(pod);
    return { type, event: { type: 'upsert', key: podKey(object), object } };
  }

  #nextUid(): string {
    const n = (++this.#uidSeq).toString(16).padStart(12, '0');
    return `5e1a7ed0-0000-4000-8000-${n}`;
  }

  #nextIp(): string {
    const n = ++this.#ipSeq;
    return `10.244.${(n >> 8) & 255}.${n & 255}`;
  }

  /** The pod as the API server would show it, through the trimmed `Pod` view. */
  #render(pod: SimPod): Pod {
    const { labels, namespace, portName } = this.#options;
    const condition = (type: string, value: boolean): PodCondition => ({
      type,
      status: value ? 'True' : 'False',
      reason: undefined,
      message: undefined,
      lastTransitionTime: undefined,
    });
    const containerName = 'server';
    const state: ContainerState = pod.running
      ? { waiting: undefined, running: { startedAt: pod.startedAt }, terminated: undefined }
      : {
          waiting: { reason: 'ContainerCreating', message: undefined },
          running: undefined,
          terminated: undefined,
        };
    const lastState: ContainerState =
      pod.restarts > 0
        ? {
            waiting: undefined,
            running: undefined,
            terminated: {
              exitCode: 137,
              reason: 'Error',
              message: undefined,
              startedAt: undefined,
              finishedAt: undefined,
            },
          }
        : undefined;
    return {
      metadata: {
        name: pod.name,
        namespace,
        uid: pod.uid,
        resourceVersion: String(pod.resourceVersion),
        deletionTimestamp: pod.deletionTimestamp,
        labels: {
          [labels.pool]: pod.pool,
          [labels.cellIndex]: String(pod.group),
          [labels.workerIndex]: String(pod.worker),
        },
        annotations: { [labels.cellSize]: String(pod.size) },
      },
      spec: {
        nodeName: pod.node,
        subdomain: pod.pool,
        nodeSelector: {},
        schedulingGates: [],
        containers: [
          {
            name: containerName,
            ports: [{ name: portName, containerPort: pod.containerPort, protocol: 'TCP' }],
          },
        ],
      },
      status: {
        phase: pod.running ? 'Running' : 'Pending',
        podIP: pod.ip,
        conditions: [
          condition('PodScheduled', pod.node !== undefined),
          condition('Initialized', pod.running),
          condition('ContainersReady', pod.ready),
          condition('Ready', pod.ready),
        ],
        containerStatuses: pod.node
          ? [
              {
                name: containerName,
                ready: pod.ready,
                restartCount: pod.restarts,
                state,
                lastState,
              },
            ]
          : [],
      },
    };
  }
}
