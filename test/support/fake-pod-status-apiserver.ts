/**
 * A loopback HTTP server speaking just enough of `pods/status` server-side apply for the cell
 * readiness gate's unit tests: PATCH `application/apply-patch+yaml` merging the applied conditions
 * by `type` (as the real list-map does), 404 for an unknown pod, 409 when the applied uid is not
 * the pod's, a resourceVersion that grows on every write. Every request is recorded in order;
 * scripted failures answer the requests whose pod matches.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  FakeJsonApiServer,
  type ReceivedJsonRequest,
  apiStatus as status,
} from './fake-json-apiserver.js';

export interface RecordedStatusRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export interface StoredCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface StoredPod {
  uid: string;
  resourceVersion: string;
  conditions: StoredCondition[];
}

const PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status$/;

export class FakePodStatusApiServer extends FakeJsonApiServer {
  readonly requests: RecordedStatusRequest[] = [];
  /** By `namespace/name`. */
  readonly pods = new Map<string, StoredPod>();
  #version = 1000;
  #failures: Array<{ pod: string; status: number; times: number }> = [];

  private constructor() {
    super('secret-token');
  }

  static start(): Promise<FakePodStatusApiServer> {
    return new FakePodStatusApiServer().listen();
  }

  /** A pod the server knows, with its uid and resourceVersion. */
  addPod(key: string, uid: string, resourceVersion = '1'): void {
    this.pods.set(key, { uid, resourceVersion, conditions: [] });
  }

  /** The next `times` writes to `pod` (`namespace/name`) answer `status`. */
  fail(pod: string, code: number, times = Number.POSITIVE_INFINITY): void {
    this.#failures.push({ pod, status: code, times });
  }

  heal(): void {
    this.#failures = [];
  }

  /** `namespace/name` of every write, in order. */
  writes(): string[] {
    return this.requests.map((r) => {
      const match = PATH.exec(r.path);
      return match ? `${decodeURIComponent(match[1]!)}/${decodeURIComponent(match[2]!)}` : r.path;
    });
  }

  protected handle(request: ReceivedJsonRequest, response: ServerResponse): void {
    const url = new URL(request.url, 'http://fake');
    this.requests.push({
      method: request.method,
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body: request.body,
    });
    const match = PATH.exec(url.pathname);
    if (request.method !== 'PATCH' || !match) {
      this.reply(response, 405, status(405, 'MethodNotAllowed', 'not modelled'));
      return;
    }
    const key = `${decodeURIComponent(match[1]!)}/${decodeURIComponent(match[2]!)}`;
    const failure = this.#failures.find((f) => f.pod === key && f.times > 0);
    if (failure) {
      failure.times -= 1;
      this.reply(response, failure.status, status(failure.status, 'InternalError', 'scripted'));
      return;
    }
    const pod = this.pods.get(key);
    if (!pod) {
      this.reply(response, 404, status(404, 'NotFound', `pods "${match[2]}" not found`));
      return;
    }
    const body = request.body as {
      metadata?: { uid?: string };
      status?: { conditions?: StoredCondition[] };
    };
    if (body.metadata?.uid !== undefined && body.metadata.uid !== pod.uid) {
      this.reply(response, 409, status(409, 'Conflict', 'Precondition failed: UID'));
      return;
    }
    for (const condition of body.status?.conditions ?? []) {
      const at = pod.conditions.findIndex((c) => c.type === condition.type);
      if (at >= 0) pod.conditions[at] = condition;
      else pod.conditions.push(condition);
    }
    this.#version += 1;
    pod.resourceVersion = String(this.#version);
    this.reply(response, 200, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: match[2],
        namespace: match[1],
        uid: pod.uid,
        resourceVersion: pod.resourceVersion,
      },
      status: { conditions: pod.conditions },
    });
  }
}
