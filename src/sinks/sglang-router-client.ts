/**
 * The HTTP calls the SGLang router sink makes, one method per call of the router's worker API
 * (smg >= 1.x and sglang-router >= 0.3: `GET/POST /workers`, `GET/DELETE /workers/{id}`).
 *
 * Every call is bounded in time (a timeout on the injected clock that covers the whole answer, body
 * included) and in size (the body is read as a stream and refused past `ROUTER_MAX_RESPONSE_BYTES`),
 * and honours the caller's signal; errors name the call and what went wrong, never the API key.
 * Redirects are never followed (fetch's default follows them to any host, so a worker list and the
 * API key's calls would land on a host `/api/v1/sinks` does not name): a 3xx answer is an error
 * naming where it pointed.
 */
import { isRecord } from '../kubernetes/client/api-errors.js';
import { abortReason, type Clock, realClock } from '../runtime/clock.js';

/** How long one call to a router may take before it counts as failed. */
const ROUTER_REQUEST_TIMEOUT_MS = 5_000;
/**
 * 16 MiB per answer. A worker is about 300 bytes of JSON in `GET /workers`, so even a router with
 * thousands of workers answers a few hundred KiB; a larger answer is a broken or hostile router.
 * The body is counted as it streams in and the call fails as soon as it passes the cap: a router
 * once answered 1.5 GB, which, buffered whole, grew the process to 3.2 GB.
 */
export const ROUTER_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** How much of an error body goes into an error message. */
const ERROR_BODY_LIMIT = 200;

/** One worker as `GET /workers` lists it. */
export interface RouterWorker {
  id: string;
  url: string;
  healthy: boolean;
  /** `ready`, `not_ready` or `draining` (smg 1.13); absent on routers that report none. */
  status?: string;
  /**
   * The worker's string labels: smg 1.13 lists them as `labels`, sglang-router 0.3.2 as
   * `metadata` (both keep the ones a `POST /workers` gave, beside what they learnt from the
   * engine). Absent when the router lists neither: it keeps no marks.
   */
  labels?: Record<string, string>;
  /** `regular`, `prefill` or `decode` (smg 1.13, sglang-router 0.3.2); absent if not reported. */
  workerType?: string;
  /** A prefill worker's bootstrap port, when it was registered with one. */
  bootstrapPort?: number;
}

/** Labels read per worker at most: an engine reports about ten; more is a broken router. */
const MAX_WORKER_LABELS = 64;

/** A worker's `labels` (smg) or `metadata` (sglang-router 0.3), string values only, bounded. */
function workerLabels(worker: Record<string, unknown>): Record<string, string> | undefined {
  const source = isRecord(worker.labels)
    ? worker.labels
    : isRecord(worker.metadata)
      ? worker.metadata
      : undefined;
  if (source === undefined) return undefined;
  const labels: Record<string, string> = {};
  let count = 0;
  for (const [key, value] of Object.entries(source)) {
    if (typeof value !== 'string') continue;
    if (++count > MAX_WORKER_LABELS) break;
    labels[key] = value;
  }
  return labels;
}

/**
 * What `POST /workers` registers besides the URL: a prefill/decode router's worker type, and a
 * prefill worker's bootstrap port (both smg 1.13 and sglang-router 0.3.2 take these fields, and
 * list them back in `GET /workers`). Without a type the router registers a regular worker.
 */
export interface WorkerRegistration {
  workerType?: 'prefill' | 'decode';
  /** The sink's mark (`--sglang-router-ownership managed`): both routers keep it on the worker. */
  labels?: Record<string, string>;
  bootstrapPort?: number;
}

/** A worker looked up by id (`GET /workers/{id}`), which also shows adds still being processed. */
interface RouterWorkerDetail {
  id: string;
  url: string;
  status?: string;
  /** The background job working on it, if any: e.g. `AddWorker` / `processing`. */
  job?: { type?: string; status?: string };
}

/**
 * How a `POST /workers` ended when the router took it. `id`, when the router gave one, is what
 * lets the sink follow a pending add with `GET /workers/{id}`; an `exists` without one, for a URL
 * the router does not list, is a router the sink cannot believe (it backs that URL off).
 */
type AddResult =
  | { result: 'accepted'; id?: string }
  /** 409: the URL is already registered or being added (smg 1.13); `id` when the router named it. */
  | { result: 'exists'; id?: string };

/**
 * Every failure of a router call (transport, timeout, size, status, unreadable answer), with a
 * message naming the call and never the API key: the sink reports it as the target's `lastError`
 * and in `sink.failed` as it is.
 */
export class RouterRequestError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RouterRequestError';
  }
}

/**
 * One router's connection settings; the sink builds one client per target, all with the same key
 * and timeout.
 */
export interface SglangRouterClientOptions {
  /** The router's base URL, e.g. `http://router:30000`. */
  url: string;
  /** Sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  timeoutMs?: number;
  /** Largest answer read; default `ROUTER_MAX_RESPONSE_BYTES`. */
  maxResponseBytes?: number;
  clock?: Clock;
}

const uuidPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * One router's worker API as typed calls: the sink decides what to call, this class only sends it,
 * bounds it and reads the answer leniently (smg and sglang-router spell some fields differently).
 * `url` is the base URL without trailing slashes, the target's identity in status and metrics.
 */
export class SglangRouterClient {
  readonly url: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #clock: Clock;

  constructor(options: SglangRouterClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.#apiKey = options.apiKey || undefined;
    this.#timeoutMs = options.timeoutMs ?? ROUTER_REQUEST_TIMEOUT_MS;
    this.#maxResponseBytes = options.maxResponseBytes ?? ROUTER_MAX_RESPONSE_BYTES;
    if (!(this.#maxResponseBytes > 0)) throw new RangeError('maxResponseBytes must be positive');
    this.#clock = options.clock ?? realClock;
  }

  /** `GET /workers`: the registered workers (adds still pending are not listed). */
  async listWorkers(signal: AbortSignal): Promise<RouterWorker[]> {
    const { status, body } = await this.#request('GET', '/workers', undefined, signal);
    if (status !== 200) throw this.#statusError('GET /workers', status, body);
    const workers = isRecord(body) ? body.workers : undefined;
    if (!Array.isArray(workers)) {
      throw new RouterRequestError('GET /workers: the answer has no "workers" list');
    }
    const result: RouterWorker[] = [];
    for (const worker of workers) {
      if (!isRecord(worker)) continue;
      const id = text(worker.id);
      const url = text(worker.url);
      if (id === undefined || url === undefined) continue;
      const entry: RouterWorker = { id, url, healthy: worker.is_healthy === true };
      const workerStatus = text(worker.status);
      if (workerStatus !== undefined) entry.status = workerStatus;
      const labels = workerLabels(worker);
      if (labels !== undefined) entry.labels = labels;
      const workerType = text(worker.worker_type);
      if (workerType !== undefined) entry.workerType = workerType;
      const bootstrapPort = worker.bootstrap_port;
      if (typeof bootstrapPort === 'number' && Number.isInteger(bootstrapPort)) {
        entry.bootstrapPort = bootstrapPort;
      }
      result.push(entry);
    }
    return result;
  }

  /** `GET /workers/{id}`; `null` when the router knows no such id (404). */
  async getWorker(id: string, signal: AbortSignal): Promise<RouterWorkerDetail | null> {
    const call = `GET /workers/${id}`;
    const { status, body } = await this.#request(
      'GET',
      `/workers/${encodeURIComponent(id)}`,
      undefined,
      signal,
    );
    if (status === 404) return null;
    if (status !== 200 || !isRecord(body)) throw this.#statusError(call, status, body);
    const detail: RouterWorkerDetail = { id: text(body.id) ?? id, url: text(body.url) ?? '' };
    const workerStatus = text(body.status);
    if (workerStatus !== undefined) detail.status = workerStatus;
    if (isRecord(body.job_status)) {
      const job: { type?: string; status?: string } = {};
      const type = text(body.job_status.job_type);
      const jobStatus = text(body.job_status.status);
      if (type !== undefined) job.type = type;
      if (jobStatus !== undefined) job.status = jobStatus;
      detail.job = job;
    }
    return detail;
  }

  /**
   * `POST /workers {"url", "worker_type"?, "bootstrap_port"?, "labels"?}`: 202 (queued in the
   * background) or 409 (already there) succeed. `labels` are the sink's mark.
   */
  async addWorker(
    url: string,
    signal: AbortSignal,
    registration: WorkerRegistration = {},
  ): Promise<AddResult> {
    const request: Record<string, unknown> = { url };
    if (registration.workerType !== undefined) request.worker_type = registration.workerType;
    if (registration.bootstrapPort !== undefined) {
      request.bootstrap_port = registration.bootstrapPort;
    }
    if (registration.labels !== undefined) request.labels = registration.labels;
    const { status, body, raw } = await this.#request('POST', '/workers', request, signal);
    if (status === 202 || status === 200 || status === 201) {
      const id = isRecord(body) ? text(body.worker_id) : undefined;
      return id === undefined ? { result: 'accepted' } : { result: 'accepted', id };
    }
    if (status === 409) {
      const id = raw.match(uuidPattern)?.[0];
      return id === undefined ? { result: 'exists' } : { result: 'exists', id };
    }
    throw this.#statusError('POST /workers', status, body);
  }

  /** `DELETE /workers/{id}`: 202 (queued) and 404 (already gone) both leave it not registered. */
  async removeWorker(id: string, signal: AbortSignal): Promise<'accepted' | 'unknown'> {
    const { status, body } = await this.#request(
      'DELETE',
      `/workers/${encodeURIComponent(id)}`,
      undefined,
      signal,
    );
    if (status === 202 || status === 200 || status === 204) return 'accepted';
    if (status === 404) return 'unknown';
    throw this.#statusError(`DELETE /workers/${id}`, status, body);
  }

  async #request(
    method: string,
    path: string,
    json: unknown,
    signal: AbortSignal,
  ): Promise<{ status: number; body: unknown; raw: string }> {
    if (signal.aborted) throw abortReason(signal);
    const call = `${method} ${path}`;
    const timeout = new AbortController();
    const stopTimer = new AbortController();
    this.#clock.sleep(this.#timeoutMs, stopTimer.signal).then(
      () =>
        timeout.abort(new RouterRequestError(`${call}: no answer within ${this.#timeoutMs} ms`)),
      () => {},
    );
    // Aborted when the answer passes the size cap, so the connection is dropped, not drained.
    const refusal = new AbortController();
    const headers: Record<string, string> = { accept: 'application/json' };
    if (json !== undefined) headers['content-type'] = 'application/json';
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    try {
      const response = await fetch(`${this.url}${path}`, {
        method,
        headers,
        ...(json === undefined ? {} : { body: JSON.stringify(json) }),
        redirect: 'manual',
        signal: AbortSignal.any([signal, timeout.signal, refusal.signal]),
      });
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel().catch(() => {});
        throw new RouterRequestError(
          `${call}: HTTP ${response.status} redirect${redirectTarget(response, this.url)}; ` +
            'redirects are not followed: configure the URL the router answers on',
        );
      }
      const raw = await readBounded(response, this.#maxResponseBytes, () => {
        const error = new RouterRequestError(
          `${call}: the answer is larger than ${describeBytes(this.#maxResponseBytes)}; refused`,
        );
        refusal.abort(error);
        return error;
      });
      let body: unknown = raw;
      try {
        body = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        // not JSON: keep the text for the error message
      }
      return { status: response.status, body, raw };
    } catch (error) {
      if (signal.aborted) throw abortReason(signal);
      if (error instanceof RouterRequestError) throw error;
      if (timeout.signal.aborted) throw timeout.signal.reason;
      if (refusal.signal.aborted) throw refusal.signal.reason;
      throw new RouterRequestError(`${call}: ${this.#redact(describeFetchError(error))}`, {
        cause: error,
      });
    } finally {
      stopTimer.abort();
    }
  }

  #statusError(call: string, status: number, body: unknown): RouterRequestError {
    let detail = '';
    if (isRecord(body)) {
      const error = body.error;
      detail =
        text(error) ??
        (isRecord(error) ? text(error.message) : undefined) ??
        text(body.message) ??
        JSON.stringify(body);
    } else if (typeof body === 'string') {
      detail = body;
    }
    detail = this.#redact(detail.trim()).slice(0, ERROR_BODY_LIMIT);
    return new RouterRequestError(`${call}: HTTP ${status}${detail ? `: ${detail}` : ''}`);
  }

  /** Belt and braces: the key is only ever in a header, but no message may carry it. */
  #redact(message: string): string {
    return this.#apiKey === undefined ? message : message.replaceAll(this.#apiKey, '[redacted]');
  }
}

/**
 * The body as text, counted as it streams in: past `limit` bytes (or a `Content-Length` saying
 * so) `tooLarge()` is thrown and the rest is never read, so at most `limit` bytes are held.
 */
async function readBounded(
  response: Response,
  limit: number,
  tooLarge: () => Error,
): Promise<string> {
  const body = response.body;
  if (body === null) return '';
  if (Number(response.headers.get('content-length')) > limit) {
    const error = tooLarge();
    await body.cancel(error).catch(() => {});
    throw error;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > limit) {
      const error = tooLarge();
      await reader.cancel(error).catch(() => {});
      throw error;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, length).toString('utf8');
}

/**
 * ` to <origin>` of a redirect's `Location` (only the origin: a path or query may carry anything),
 * ` to another path of the same origin` when it stays there, or `` when there is none to read.
 */
function redirectTarget(response: Response, base: string): string {
  const location = response.headers.get('location');
  if (location === null) return '';
  const target = URL.parse(location, `${base}/`);
  if (target === null) return ' to an unreadable Location';
  if (target.origin === new URL(base).origin) return ' to another path of the same origin';
  return target.origin === 'null' ? ` to a ${target.protocol} URL` : ` to ${target.origin}`;
}

/** `16 MiB`, or the byte count when it is not a whole number of MiB. */
function describeBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}

/** fetch's "fetch failed" hides the reason (ECONNREFUSED, …) in `cause`. */
function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' && !cause.message.includes(code)
      ? `${code} ${cause.message}`
      : cause.message;
  }
  return error.message;
}
