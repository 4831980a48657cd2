/**
 * Plays the kubelet (and the scheduler's bind) against a real apiserver that has none, by writing
 * exactly what they would write: `spec.nodeName` (a bind), the pod `status` subresource (phase,
 * podIP, conditions, containerStatuses with restartCount), and the final grace-0 delete that
 * removes a gracefully deleted pod.
 *
 * Why this instead of kwok: it is a few API calls in the test process, so a test decides exactly
 * when a pod becomes Running, Ready, restarted or gone, instead of racing a controller's timing.
 *
 * Facts about the apiserver this relies on (verified by kubelet.test.ts):
 * - a pod with no `spec.nodeName` is deleted at once, whatever the grace period, because no
 *   kubelet could be running it;
 * - a bound pod deleted with a grace period > 0 keeps existing with `metadata.deletionTimestamp`
 *   set until someone (the kubelet, here `finalizeDeletion`) deletes it with grace period 0.
 */
import {
  CoreV1Api,
  type KubeConfig,
  type V1ContainerStatus,
  type V1Pod,
  type V1PodCondition,
} from '@kubernetes/client-node';

/** The node every pod is bound to unless a test names another. */
export const defaultNodeName = 'pool-e2e-node';
/** Read-modify-write attempts when the pod changed between our read and our write (409). */
const conflictRetries = 5;

export interface RunningOptions {
  /** Pod IP to report; defaults to one derived from the pod's name. */
  readonly podIP?: string;
  /** Report the containers ready (and the pod Ready); default true. */
  readonly ready?: boolean;
}

function statusCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * The next fake pod IP in 10.244.0.0/16, never one handed out before in this process (until
 * 64,770 pods): two live pods never share an address, which the controller would rightly report
 * as an `AddressConflict` and leave out of the sinks. A pod keeps its IP once it has one.
 */
let podIpsHandedOut = 0;
function nextPodIp(): string {
  const n = podIpsHandedOut % (254 * 255);
  podIpsHandedOut += 1;
  return `10.244.${Math.floor(n / 254)}.${(n % 254) + 1}`;
}

/** Returns a copy of `pod` already bound to `nodeName`, as if the scheduler had placed it. */
export function onNode(pod: V1Pod, nodeName = defaultNodeName): V1Pod {
  return { ...pod, spec: { ...pod.spec!, nodeName } };
}

export class FakeKubelet {
  readonly nodeName: string;
  readonly #core: CoreV1Api;

  constructor(kubeConfig: KubeConfig, nodeName = defaultNodeName) {
    this.nodeName = nodeName;
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /** Creates this node's Node object with a Ready condition, as a kubelet registers itself. */
  async registerNode(): Promise<void> {
    try {
      await this.#core.createNode({ body: { metadata: { name: this.nodeName } } });
    } catch (error) {
      if (statusCode(error) !== 409) throw error;
    }
    const node = await this.#core.readNode({ name: this.nodeName });
    const now = new Date();
    node.status = {
      ...node.status,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
    };
    await this.#core.replaceNodeStatus({ name: this.nodeName, body: node });
  }

  /** Binds an unscheduled pod to this node through the `binding` subresource, as the scheduler does. */
  async bind(namespace: string, name: string): Promise<void> {
    await this.#core.createNamespacedPodBinding({
      name,
      namespace,
      body: { metadata: { name }, target: { kind: 'Node', name: this.nodeName } },
    });
  }

  /** Phase Running with every container started (and, unless `ready: false`, Ready). */
  async markRunning(namespace: string, name: string, options: RunningOptions = {}): Promise<V1Pod> {
    const ready = options.ready ?? true;
    return this.#updateStatus(namespace, name, (pod) => {
      const now = new Date();
      const previous = new Map(
        (pod.status?.containerStatuses ?? []).map((status) => [status.name, status]),
      );
      const containerStatuses: V1ContainerStatus[] = (pod.spec?.containers ?? []).map((c) => {
        const lastState = previous.get(c.name)?.lastState;
        return {
          name: c.name,
          image: c.image ?? '',
          imageID: '',
          ready,
          started: true,
          restartCount: previous.get(c.name)?.restartCount ?? 0,
          state: { running: { startedAt: previous.get(c.name)?.state?.running?.startedAt ?? now } },
          ...(lastState ? { lastState } : {}),
        };
      });
      pod.status = {
        ...pod.status,
        phase: 'Running',
        hostIP: '127.0.0.1',
        podIP: options.podIP ?? pod.status?.podIP ?? nextPodIp(),
        startTime: pod.status?.startTime ?? now,
        conditions: mergeConditions(pod.status?.conditions, now, {
          PodScheduled: true,
          Initialized: true,
          ContainersReady: ready,
          // As the kubelet: Ready also waits for every readiness gate's condition to be True.
          Ready: ready && readinessGatesTrue(pod),
        }),
        containerStatuses,
      };
    });
  }

  /** Containers running but not ready (a failing readiness probe). */
  async markNotReady(namespace: string, name: string): Promise<V1Pod> {
    return this.markRunning(namespace, name, { ready: false });
  }

  /**
   * One container restart: restartCount + 1, the old run recorded as `lastState.terminated`, a new
   * run started (ready again unless `ready: false`).
   */
  async restartContainer(
    namespace: string,
    name: string,
    containerName?: string,
    options: RunningOptions = {},
  ): Promise<V1Pod> {
    await this.#updateStatus(namespace, name, (pod) => {
      const now = new Date();
      const target = containerName ?? pod.spec?.containers[0]?.name;
      const statuses = pod.status?.containerStatuses ?? [];
      const status = statuses.find((s) => s.name === target);
      if (!status)
        throw new Error(`e2e kubelet: pod ${namespace}/${name} has no running container ${target}`);
      status.lastState = {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: status.state?.running?.startedAt ?? now,
          finishedAt: now,
        },
      };
      status.restartCount += 1;
      status.state = { running: { startedAt: now } };
    });
    return this.markRunning(namespace, name, options);
  }

  /** A terminal phase (Succeeded or Failed), containers terminated, nothing ready. */
  async markTerminated(
    namespace: string,
    name: string,
    phase: 'Succeeded' | 'Failed',
  ): Promise<V1Pod> {
    return this.#updateStatus(namespace, name, (pod) => {
      const now = new Date();
      const exitCode = phase === 'Succeeded' ? 0 : 1;
      pod.status = {
        ...pod.status,
        phase,
        conditions: mergeConditions(pod.status?.conditions, now, {
          ContainersReady: false,
          Ready: false,
        }),
        containerStatuses: (pod.status?.containerStatuses ?? []).map((s) => ({
          ...s,
          ready: false,
          started: false,
          state: {
            terminated: {
              exitCode,
              reason: phase === 'Succeeded' ? 'Completed' : 'Error',
              startedAt: s.state?.running?.startedAt ?? now,
              finishedAt: now,
            },
          },
        })),
      };
    });
  }

  /**
   * What the kubelet does once a gracefully deleted pod's containers are gone: delete it with grace
   * period 0, guarded by its uid so a newer pod of the same name is never removed. Resolves quietly
   * if the pod is already gone.
   */
  async finalizeDeletion(namespace: string, name: string): Promise<void> {
    let uid: string | undefined;
    try {
      uid = (await this.#core.readNamespacedPod({ name, namespace })).metadata?.uid;
    } catch (error) {
      if (statusCode(error) === 404) return;
      throw error;
    }
    try {
      await this.#core.deleteNamespacedPod({
        name,
        namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, ...(uid ? { preconditions: { uid } } : {}) },
      });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
    }
  }

  async #updateStatus(
    namespace: string,
    name: string,
    change: (pod: V1Pod) => void,
  ): Promise<V1Pod> {
    for (let attempt = 1; ; attempt += 1) {
      const pod = await this.#core.readNamespacedPod({ name, namespace });
      if (!pod.spec?.nodeName) {
        throw new Error(
          `e2e kubelet: pod ${namespace}/${name} is not bound to a node (use onNode or bind)`,
        );
      }
      change(pod);
      try {
        return await this.#core.replaceNamespacedPodStatus({ name, namespace, body: pod });
      } catch (error) {
        if (statusCode(error) !== 409 || attempt >= conflictRetries) throw error;
      }
    }
  }
}

/** Every `spec.readinessGates` condition of the pod is `True` (none: true). */
function readinessGatesTrue(pod: V1Pod): boolean {
  const conditions = pod.status?.conditions ?? [];
  return (pod.spec?.readinessGates ?? []).every(
    (gate) => conditions.find((c) => c.type === gate.conditionType)?.status === 'True',
  );
}

/** Sets the given condition types to True/False, keeping lastTransitionTime when unchanged. */
function mergeConditions(
  existing: V1PodCondition[] | undefined,
  now: Date,
  wanted: Record<string, boolean>,
): V1PodCondition[] {
  const byType = new Map((existing ?? []).map((c) => [c.type, c]));
  for (const [type, value] of Object.entries(wanted)) {
    const status = value ? 'True' : 'False';
    const previous = byType.get(type);
    byType.set(type, {
      type,
      status,
      lastTransitionTime: previous?.status === status ? (previous.lastTransitionTime ?? now) : now,
    });
  }
  return [...byType.values()];
}
