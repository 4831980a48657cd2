/**
 * Every version of every pod of one namespace, in the order a watch delivered them, each with the
 * moment it arrived here. The actuator scenarios judge what the service did against it: when a
 * readiness-gate condition changed and whether `Ready` ever ran ahead of it, and which cells the
 * API held alive at any moment of a rolling update. A watch rather than polls, so a version that
 * lived for a few milliseconds is not missed.
 */
import { type KubeConfig, type V1Pod, Watch } from '@kubernetes/client-node';
import { waitFor } from '../support-service.js';

/** One version of a pod, as the watch delivered it. */
export interface PodVersionAt {
  /** `Date.now()` when the event arrived. */
  readonly at: number;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly pod: V1Pod;
}

/** The status of condition `type` of `pod` (`'True'`, `'False'`, …), or undefined without it. */
export function conditionStatus(pod: V1Pod, type: string): string | undefined {
  return pod.status?.conditions?.find((c) => c.type === type)?.status;
}

/** How often next() looks at the versions received. */
const LOOK_EVERY_MS = 20;

export class PodTimeline {
  readonly versions: PodVersionAt[] = [];
  readonly #listeners: Array<(version: PodVersionAt) => void> = [];
  readonly #kubeConfig: KubeConfig;
  readonly #namespace: string;
  #abort: AbortController | undefined;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#kubeConfig = kubeConfig;
    this.#namespace = namespace;
  }

  /** Opens the watch; resolves once it is established. */
  async start(): Promise<void> {
    this.#abort = await new Watch(this.#kubeConfig).watch(
      `/api/v1/namespaces/${this.#namespace}/pods`,
      {},
      (type: string, pod: V1Pod) => {
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
          const version = { at: Date.now(), type, pod } as const;
          this.versions.push(version);
          for (const listener of this.#listeners) listener(version);
        }
      },
      () => {},
    );
  }

  /** Calls `listener` with every version received from now on, as it arrives. */
  onVersion(listener: (version: PodVersionAt) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * The first version received at or after index `from` for which `matches` holds; waits up to
   * `ms` for it.
   */
  next(
    what: string,
    matches: (version: PodVersionAt) => boolean,
    from: number,
    ms: number,
  ): Promise<PodVersionAt> {
    let seen = from;
    return waitFor(
      what,
      async () => {
        for (; seen < this.versions.length; seen += 1) {
          const version = this.versions[seen]!;
          if (matches(version)) return version;
        }
        return undefined;
      },
      ms,
      LOOK_EVERY_MS,
    );
  }

  stop(): void {
    this.#abort?.abort();
  }
}
