/**
 * One pod condition written through the `pods/status` subresource by server-side apply: the
 * readiness gate's only API call.
 *
 * Server-side apply with a field manager of its own means the controller owns exactly the one
 * entry of `status.conditions` it sends (conditions are a list keyed by `type`), and nothing the
 * kubelet or anyone else writes there: no read-modify-write, no conflict with the kubelet's status
 * updates. The apply names the pod's uid, so a newer pod that took the name is never written.
 *
 * Requests go over plain `node:http(s)` (../client/api-request.ts) with the connection
 * ../client/connection.ts builds, bounded in time and in the size of the answer, as the
 * EndpointSlice API does. Errors name the pod and the server's `Status`, never a request header.
 */
import { isRecord } from '../client/api-errors.js';
import { answerStatus } from '../client/api-request.js';
import type { ClusterOptions } from '../client/connection.js';
import { ResourceApiError, type ResourceCall } from '../client/resource-api-error.js';
import {
  type ResourceApiOptions,
  ResourceClient,
  resourceApiOptions,
} from '../client/resource-client.js';

/**
 * The field manager of the gate's applies, distinct from the EndpointSlice sink's: `managedFields`
 * then say who wrote the condition, and `kubectl apply --server-side --field-manager` with this
 * name is how someone removes it (docs/operations.md).
 */
const POD_CONDITION_FIELD_MANAGER = 'pool-controller-cell-readiness-gate';
/** 10 s per request: one small patch; a slower answer is a stuck server. */
const POD_CONDITION_REQUEST_TIMEOUT_MS = 10_000;
/**
 * The answer is the whole pod (managed fields included); the API server stores objects of up to
 * about 1.5 MiB, so 4 MiB holds any pod and refuses anything that is not one.
 */
const POD_CONDITION_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/** One condition of `status.conditions`, as applied. */
interface PodConditionPatch {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  /** RFC 3339: when `status` last changed (kept when only reason or message change). */
  lastTransitionTime: string;
}

/** What the gate needs of the API; the unit tests' fake speaks HTTP to the real class. */
export interface PodConditionApi {
  /**
   * Applies `condition` to pod `namespace/name` if its uid is still `uid`; resolves with the
   * pod's resourceVersion after the write.
   */
  apply(
    pod: { namespace: string; name: string; uid: string },
    condition: PodConditionPatch,
    signal: AbortSignal,
  ): Promise<{ resourceVersion: string | undefined }>;
}

/** What bounds every condition write (`ResourceClient`). */
const POD_CONDITION_BOUNDS = {
  defaultTimeoutMs: POD_CONDITION_REQUEST_TIMEOUT_MS,
  maxBodyBytes: POD_CONDITION_MAX_RESPONSE_BYTES,
};

/**
 * `PodConditionApi` over `pods/status`: server-side apply under the gate's own field manager, so
 * the controller owns its one condition and never the kubelet's.
 */
export class KubernetesPodConditionApi implements PodConditionApi {
  readonly #client: ResourceClient;

  constructor(options: ResourceApiOptions) {
    this.#client = new ResourceClient(options, POD_CONDITION_BOUNDS);
  }

  async apply(
    pod: { namespace: string; name: string; uid: string },
    condition: PodConditionPatch,
    signal: AbortSignal,
  ): Promise<{ resourceVersion: string | undefined }> {
    const call: ResourceCall = {
      verb: 'APPLY',
      resource: 'pods/status',
      target: `${pod.namespace}/${pod.name}`,
    };
    const query = new URLSearchParams({
      fieldManager: POD_CONDITION_FIELD_MANAGER,
      // Forced, as controllers apply: a condition of this type is the gate's, whoever wrote it last.
      force: 'true',
      fieldValidation: 'Strict',
    });
    const body = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
      status: { conditions: [condition] },
    };
    const answer = await this.#client.send({
      method: 'PATCH',
      path: `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/status?${query}`,
      body,
      contentType: 'application/apply-patch+yaml',
      signal,
      call,
    });
    if (answer.statusCode !== 200 && answer.statusCode !== 201) {
      throw ResourceApiError.refused(call, answer.statusCode, answerStatus(answer));
    }
    const stored = this.#client.parseJson(answer.body, call);
    if (!isRecord(stored) || !isRecord(stored.metadata)) {
      throw ResourceApiError.malformed(call, 'the answer is not a pod');
    }
    const resourceVersion = stored.metadata.resourceVersion;
    return { resourceVersion: typeof resourceVersion === 'string' ? resourceVersion : undefined };
  }
}

/** The pod condition API of the configured cluster (kubeconfig, in-cluster, context). */
export async function connectPodConditionApi(
  options: ClusterOptions & { timeoutMs?: number } = {},
): Promise<KubernetesPodConditionApi> {
  return new KubernetesPodConditionApi(await resourceApiOptions(options));
}
