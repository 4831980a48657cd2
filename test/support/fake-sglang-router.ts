/**
 * A fake SGLang router on loopback that models the worker API as measured on smg 1.13.0 and
 * sglang-router 0.3.2:
 * - `POST /workers {url}` → 202 with `worker_id`; the add is pending (NOT in `GET /workers`, but
 *   `GET /workers/{id}` shows it with `job_status`) until the test calls `completeAdds()` (or at
 *   once with `autoComplete`). A URL already known: 1.13 answers 409 naming the id; 0.3.2 answers
 *   202 with the existing id (and counts an extra background job).
 * - `DELETE /workers/{id}` → 202, unknown id → 404. On 1.13 a registered worker stays listed as
 *   `draining` until `finishDrains()`; on 0.3.2 it is gone at once. A DELETE of a pending add is
 *   lost: the worker registers anyway when the add completes.
 * - `POST /workers {url, labels}` keeps the labels: listed as `labels` (1.13) or `metadata`
 *   (0.3.2), beside the engine's own (`model_path`); `keepsLabels: false` lists neither.
 * - `worker_type` (`prefill`/`decode`, default `regular`) and `bootstrap_port` are kept as posted
 *   and listed back, as both versions do (measured with `--pd-disaggregation`).
 * - Routers that lie (issue 36): `lie: 'conflict-without-id'` answers every add 409 without an id
 *   and registers nothing; `'accept-without-id'` answers 202 without an id and registers nothing;
 *   `dropsLabels` lists workers without the labels posted (the engine's own only).
 * - `giveUp(url)` lists a registered worker as `failed` (1.13), as smg does once its health checks
 *   give up on it, until it is removed.
 * - `restart()` forgets every worker; `stop()`/`start()` make it unreachable and back (same port).
 * Every request is recorded as `METHOD /path` (plus ` <url>` for POST, then ` <type>` and
 * ` bootstrap=<port>` when given) so tests assert the sequence.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeRouterVersion = '1.13' | '0.3.2';

export interface FakeWorker {
  id: string;
  url: string;
  state: 'pending' | 'ready' | 'draining' | 'failed';
  healthy: boolean;
  /** Listed as `failed` (1.13): the router's health checks gave up on it (see `giveUp`). */
  gaveUp?: boolean;
  labels: Record<string, string>;
  workerType: 'regular' | 'prefill' | 'decode';
  bootstrapPort?: number;
}

/** The `status` smg 1.13 lists for a registered worker. */
function listedStatus(worker: FakeWorker): 'draining' | 'failed' | 'ready' | 'not_ready' {
  if (worker.state === 'draining') return 'draining';
  if (worker.gaveUp) return 'failed';
  return worker.healthy ? 'ready' : 'not_ready';
}

export interface FakeSglangRouterOptions {
  version?: FakeRouterVersion;
  /** Required as `Authorization: Bearer <key>` on /workers when set. */
  apiKey?: string;
  /** Adds register as soon as they are posted (still answered 202 first). */
  autoComplete?: boolean;
  /** false: a router that lists no labels at all (keeps no marks). Default true, as both measured. */
  keepsLabels?: boolean;
}

export class FakeSglangRouter {
  readonly version: FakeRouterVersion;
  readonly apiKey: string | undefined;
  autoComplete: boolean;
  readonly keepsLabels: boolean;
  /** `GET /workers`, `POST /workers http://…`, `DELETE /workers/<id>`, … in arrival order. */
  readonly requests: string[] = [];
  /** Authorization headers as received, to check the key is sent. */
  readonly authorizations: Array<string | undefined> = [];
  /** Background jobs 0.3.2 started for a URL that already existed. */
  extraJobs = 0;
  /** A router that lies about adds (see the header); `undefined`: it tells the truth. */
  lie: 'conflict-without-id' | 'accept-without-id' | undefined;
  /** Lists workers without the labels they were posted with. */
  dropsLabels = false;
  /** Answer every request with this status instead (e.g. 500), when set. */
  failWith: number | undefined;
  /** Requests matching this prefix (e.g. `POST`) get `failWith`-like 500s. */
  failOnly: string | undefined;
  /**
   * Hold every answer (recorded first) until `releaseHeld()`, to test timeouts and aborts: the
   * test waits for `held` to count the request instead of sleeping while it is in flight.
   */
  holdAnswers = false;
  /** With `holdAnswers`: only requests matching this prefix (e.g. `POST`) are held. */
  holdOnly: string | undefined;
  /** Requests whose answer is being held now. */
  held = 0;
  readonly #releases: Array<() => void> = [];
  readonly #workers = new Map<string, FakeWorker>();
  /** Removals sent while the add was pending: lost once the add completes. */
  readonly lostDeletes: string[] = [];
  #server: Server | undefined;
  #port = 0;

  constructor(options: FakeSglangRouterOptions = {}) {
    this.version = options.version ?? '1.13';
    this.apiKey = options.apiKey;
    this.autoComplete = options.autoComplete ?? false;
    this.keepsLabels = options.keepsLabels ?? true;
    this.lie = undefined;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Unreachable until start() again (same port). Workers are kept unless restart() is called. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.releaseHeld();
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** A restarted router has forgotten every worker. */
  restart(): void {
    this.#workers.clear();
  }

  workers(): FakeWorker[] {
    return [...this.#workers.values()];
  }

  /** URLs listed by `GET /workers` (not pending), sorted. */
  listed(): string[] {
    return this.workers()
      .filter((w) => w.state === 'ready' || w.state === 'draining')
      .map((w) => w.url)
      .sort();
  }

  /** A worker added behind the controller's back, registered at once. */
  addByHand(
    url: string,
    options: {
      labels?: Record<string, string>;
      workerType?: FakeWorker['workerType'];
      bootstrapPort?: number;
    } = {},
  ): string {
    const id = randomUUID();
    const { labels = {}, workerType = 'regular', bootstrapPort } = options;
    this.#workers.set(id, {
      id,
      url,
      state: 'ready',
      healthy: true,
      labels: { ...labels },
      workerType,
      ...(bootstrapPort === undefined ? {} : { bootstrapPort }),
    });
    return id;
  }

  setHealthy(url: string, healthy: boolean): void {
    for (const worker of this.#workers.values()) if (worker.url === url) worker.healthy = healthy;
  }

  /**
   * The router's health checks give up on a registered worker (smg 1.13's `failed`, the end of
   * its health state machine): it stays listed, unroutable, until removed.
   */
  giveUp(url: string): void {
    for (const worker of this.#workers.values()) {
      if (worker.url === url && worker.state === 'ready') worker.gaveUp = true;
    }
  }

  /** Pending adds register (the engine answered its health check). */
  completeAdds(): void {
    for (const worker of this.#workers.values()) {
      if (worker.state === 'pending') worker.state = 'ready';
    }
  }

  /** Pending adds fail (the router gave up on the engine). */
  failAdds(): void {
    for (const worker of this.#workers.values()) {
      if (worker.state === 'pending') worker.state = 'failed';
    }
  }

  /** Draining workers (1.13) leave the list. */
  finishDrains(): void {
    for (const [id, worker] of this.#workers) {
      if (worker.state === 'draining') this.#workers.delete(id);
    }
  }

  /** Lets every held answer go (the client may have gone already). */
  releaseHeld(): void {
    for (const release of this.#releases.splice(0)) release();
  }

  clearRequests(): void {
    this.requests.length = 0;
    this.authorizations.length = 0;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      // answered 400 below where a body is needed
    }
    const url = typeof body.url === 'string' ? body.url : undefined;
    const workerType =
      body.worker_type === 'prefill' || body.worker_type === 'decode'
        ? body.worker_type
        : undefined;
    const bootstrapPort = typeof body.bootstrap_port === 'number' ? body.bootstrap_port : undefined;
    const posted = [
      url,
      workerType,
      bootstrapPort === undefined ? undefined : `bootstrap=${bootstrapPort}`,
    ].filter((part) => part !== undefined);
    this.requests.push(
      method === 'POST' && url !== undefined
        ? `${method} ${path} ${posted.join(' ')}`
        : `${method} ${path}`,
    );
    this.authorizations.push(req.headers.authorization);
    if (
      this.holdAnswers &&
      (this.holdOnly === undefined || `${method} ${path}`.startsWith(this.holdOnly))
    ) {
      this.held += 1;
      await new Promise<void>((resolve) => this.#releases.push(resolve));
      this.held -= 1;
    }
    const json = (status: number, value: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (path === '/health' || path === '/readiness') return json(200, {});
    if (this.apiKey !== undefined && req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return json(401, { error: { message: 'Missing API key', code: 'invalid_api_key' } });
    }
    if (
      this.failWith !== undefined &&
      (this.failOnly === undefined || `${method} ${path}`.startsWith(this.failOnly))
    ) {
      return json(this.failWith, { error: 'injected failure' });
    }
    if (this.autoComplete) queueMicrotask(() => this.completeAdds());

    if (path === '/workers' && method === 'GET') {
      const workers = this.workers()
        .filter((w) => w.state === 'ready' || w.state === 'draining')
        .map((w) => ({
          id: w.id,
          url: w.url,
          is_healthy: w.state === 'ready' && w.healthy && !w.gaveUp,
          ...(this.keepsLabels
            ? {
                [this.version === '1.13' ? 'labels' : 'metadata']: {
                  model_path: 'fake-model',
                  ...(this.dropsLabels ? {} : w.labels),
                },
              }
            : {}),
          worker_type: w.workerType,
          ...(w.bootstrapPort === undefined ? {} : { bootstrap_port: w.bootstrapPort }),
          ...(this.version === '1.13' ? { status: listedStatus(w) } : {}),
        }));
      return json(200, { workers, total: workers.length, stats: {} });
    }
    if (path === '/workers' && method === 'POST') {
      if (url === undefined) return json(400, { error: 'url is required' });
      if (this.lie === 'conflict-without-id') {
        return json(409, { error: 'Worker already exists', code: 'WORKER_ALREADY_EXISTS' });
      }
      if (this.lie === 'accept-without-id') return json(202, { status: 'accepted' });
      const existing = this.workers().find((w) => w.url === url && w.state !== 'failed');
      if (existing) {
        if (this.version === '1.13') {
          return json(409, {
            error: `Worker already exists at URL '${url}' with ID ${existing.id}.`,
            code: 'WORKER_ALREADY_EXISTS',
          });
        }
        this.extraJobs += 1;
        return json(202, { status: 'accepted', worker_id: existing.id, url });
      }
      const id = randomUUID();
      const labels: Record<string, string> = {};
      if (body.labels !== null && typeof body.labels === 'object') {
        for (const [k, v] of Object.entries(body.labels)) if (typeof v === 'string') labels[k] = v;
      }
      this.#workers.set(id, {
        id,
        url,
        state: 'pending',
        healthy: true,
        labels,
        workerType: workerType ?? 'regular',
        ...(bootstrapPort === undefined ? {} : { bootstrapPort }),
      });
      return json(202, { status: 'accepted', worker_id: id, url, location: `/workers/${id}` });
    }
    const match = /^\/workers\/([^/]+)$/.exec(path);
    if (match) {
      const id = decodeURIComponent(match[1] as string);
      const worker = this.#workers.get(id);
      if (!worker) return json(404, { error: `Worker ${id} not found`, code: 'WORKER_NOT_FOUND' });
      if (method === 'GET') {
        const job =
          worker.state === 'pending' || worker.state === 'failed'
            ? {
                job_status: {
                  job_type: 'AddWorker',
                  worker_url: worker.url,
                  status: worker.state === 'failed' ? 'failed' : 'processing',
                },
              }
            : {};
        return json(200, { id, url: worker.url, is_healthy: worker.healthy, ...job });
      }
      if (method === 'DELETE') {
        if (worker.state === 'pending' || worker.state === 'failed') {
          this.lostDeletes.push(worker.url);
        } else if (this.version === '1.13') {
          worker.state = 'draining';
        } else {
          this.#workers.delete(id);
        }
        return json(202, { status: 'accepted', worker_id: id });
      }
    }
    json(404, { error: `unknown ${method} ${path}` });
  }
}
