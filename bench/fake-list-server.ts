/**
 * The loopback API server `bench:sync` measures against: the pods collection of one namespace,
 * pre-serialized so that serving costs the bench's clients nothing but the bytes.
 *
 * - LIST with `limit` pages the collection with an opaque `continue` token and
 *   `remainingItemCount`, as the API server does; without `limit` it sends the whole collection in
 *   one body. Every page is built once per page size and then served from memory.
 * - WATCH (`watch=true`) answers 200 and stays open, sending a BOOKMARK every
 *   `bookmarkIntervalMs` when the client asked for bookmarks, and ends cleanly after the client's
 *   `timeoutSeconds`, like the API server.
 * - Watch-list (a WATCH with `sendInitialEvents=true`, client-go's default where the server
 *   supports it) is **refused with 400 BadRequest** by default, as an API server without the
 *   feature does, so client-go falls back to a paged LIST (limit=500) and WATCH: every client then
 *   pays the same LIST. With `watchList: true` it is served as an API server with the feature
 *   serves it (v1.34 on): an ADDED event per pod, then the BOOKMARK annotated
 *   `k8s.io/initial-events-end` at the collection's version, then the watch goes on; the events
 *   are built once, like the pages. (The real API server's watch-list is measured by
 *   `bench:peers`.)
 * - `expire()` ends every open WATCH with a 410 Expired ERROR event, forcing a relist.
 * - `burst(n)` writes n MODIFIED events to every open WATCH at once, each pod annotated with its
 *   write time (`WRITTEN_AT_ANNOTATION`, Unix ms), for the event-latency measurement (or not
 *   stamped: a warm-up burst no latency recorder counts). `lastBurstWriteMs` is how long its write
 *   loop took: Node's HTTP response corks its socket on a write until the loop yields, so no byte
 *   of a burst leaves before its last event is written, and that time is in every client's
 *   latency alike.
 * - Label selectors are accepted and not evaluated: every pod served carries the pool label.
 *
 * Plain http with identity encoding; `writeKubeconfig` points client-node at it (plain http needs
 * `insecure-skip-tls-verify` there).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINE_NAMESPACE, enginePod } from './engine-pod.js';

/** Often enough that a short measurement sees the watch path working; the API server's is ~1 min. */
export const DEFAULT_BOOKMARK_INTERVAL_MS = 1_000;
/** Annotation a burst's pods carry: when the server wrote the event, in Unix milliseconds. */
export const WRITTEN_AT_ANNOTATION = 'bench.pool-controller.dev/written-at-ms';

/** The wall clock in Unix ms with sub-millisecond precision, comparable across processes. */
export const unixNowMs = (): number => performance.timeOrigin + performance.now();

/** The resourceVersion the first pod gets; the collection's is the last pod's. */
const FIRST_RESOURCE_VERSION = 100_000;

export interface FakeListServerOptions {
  pods: number;
  bookmarkIntervalMs?: number;
  /** Serve watch-list (`sendInitialEvents=true`) instead of refusing it; default false. */
  watchList?: boolean;
}

/** What the server was asked for, so the bench can check every client did one LIST and one WATCH. */
export interface FakeListServerCounts {
  lists: number;
  /** When the first LIST (first page) arrived, in ms since the epoch (`performance.timeOrigin` based). */
  firstListAtMs?: number;
  listPages: number;
  watches: number;
  /** WATCH requests with `sendInitialEvents=true`, answered 400 (client-go then lists). */
  watchListsRefused: number;
  /**
   * WATCH requests with `sendInitialEvents=true` served (`watchList: true`); each also counts in
   * `lists` (it reads the whole collection) and in `watches` (it goes on as the watch).
   */
  watchLists: number;
  bytesServed: number;
}

interface ContinueToken {
  rv: string;
  start: number;
}

function status(response: ServerResponse, code: number, reason: string, message: string): void {
  response.writeHead(code, { 'Content-Type': 'application/json' });
  response.end(
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code }),
  );
}

export class FakeListServer {
  readonly pods: number;
  /** Mean size of one pod's JSON as served. */
  readonly bytesPerPod: number;
  readonly resourceVersion: string;
  counts: FakeListServerCounts = FakeListServer.#zeroCounts();
  readonly #server: Server;
  readonly #items: string[];
  readonly #bookmarkIntervalMs: number;
  readonly #watchList: boolean;
  /** A watch-list's initial events and its closing bookmark, built on first use. */
  #initialEvents: Buffer | undefined;
  /** Page bodies by page size, then by start index; page size 0 is the unpaged collection. */
  readonly #pages = new Map<number, Map<number, Buffer>>();
  /** Open WATCH responses, for `burst`. */
  readonly #watches = new Set<ServerResponse>();
  #nextResourceVersion: number;
  #lastBurstWriteMs: number | undefined;

  /** How long the last `burst`'s write loop took (ms), or undefined before the first. */
  get lastBurstWriteMs(): number | undefined {
    return this.#lastBurstWriteMs;
  }

  private constructor(options: FakeListServerOptions, server: Server) {
    this.pods = options.pods;
    this.#bookmarkIntervalMs = options.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS;
    this.#watchList = options.watchList ?? false;
    this.#server = server;
    this.#items = [];
    let bytes = 0;
    for (let index = 0; index < options.pods; index += 1) {
      const item = JSON.stringify(enginePod(index, FIRST_RESOURCE_VERSION + index));
      bytes += Buffer.byteLength(item);
      this.#items.push(item);
    }
    this.bytesPerPod = options.pods > 0 ? bytes / options.pods : 0;
    this.resourceVersion = String(FIRST_RESOURCE_VERSION + options.pods);
    this.#nextResourceVersion = FIRST_RESOURCE_VERSION + options.pods + 1;
  }

  /**
   * Writes `count` MODIFIED events (pods `first`, `first + 1`, … in turn, so 4 per cell) to every
   * open WATCH in one go, each stamped with its own write time just before it is serialized and
   * written; `annotate` may add annotations of its own (a hostile pod's, say).
   * Returns how many watches received them.
   */
  burst(
    count: number,
    options: {
      first?: number;
      annotate?: (annotations: Record<string, string>) => void;
      /** Stamp each event's write time (default); false for a burst no recorder measures. */
      stamped?: boolean;
    } = {},
  ): number {
    const first = options.first ?? 0;
    const pods = Array.from({ length: count }, (_, i) => {
      const pod = enginePod(
        (first + i) % Math.max(1, this.pods),
        this.#nextResourceVersion + i,
      ) as {
        metadata: { annotations?: Record<string, string> };
      };
      pod.metadata.annotations ??= {};
      options.annotate?.(pod.metadata.annotations);
      return pod;
    });
    this.#nextResourceVersion += count;
    const stamped = options.stamped ?? true;
    const startedAtMs = unixNowMs();
    for (const pod of pods) {
      if (stamped) {
        (pod.metadata.annotations as Record<string, string>)[WRITTEN_AT_ANNOTATION] =
          unixNowMs().toFixed(3);
      }
      const line = `{"type":"MODIFIED","object":${JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...pod })}}\n`;
      for (const response of this.#watches) response.write(line);
    }
    this.#lastBurstWriteMs = unixNowMs() - startedAtMs;
    return this.#watches.size;
  }

  /**
   * Ends every open WATCH with the API server's "too old resource version" answer (an ERROR
   * event carrying a 410 Expired Status), as etcd's compaction does to a long-lived watch: each
   * client must LIST again, so a bench can measure what a relist costs. Returns how many ended.
   */
  expire(): number {
    const line = `${JSON.stringify({
      type: 'ERROR',
      object: {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: 'too old resource version',
        reason: 'Expired',
        code: 410,
      },
    })}\n`;
    const ended = this.#watches.size;
    for (const response of this.#watches) response.end(line);
    this.#watches.clear();
    return ended;
  }

  static #zeroCounts(): FakeListServerCounts {
    return {
      lists: 0,
      listPages: 0,
      watches: 0,
      watchListsRefused: 0,
      watchLists: 0,
      bytesServed: 0,
    };
  }

  /** Returns the counts so far and starts counting afresh (one measurement's requests). */
  takeCounts(): FakeListServerCounts {
    const counts = this.counts;
    this.counts = FakeListServer.#zeroCounts();
    return counts;
  }

  static async start(options: FakeListServerOptions): Promise<FakeListServer> {
    const server = createServer();
    const fake = new FakeListServer(options, server);
    server.on('request', (request, response) => fake.#handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /**
   * Builds every page of a page size now, so no client's measurement pays for serializing; with
   * `watchList`, the initial events too.
   */
  prepare(pageSize: number): void {
    if (this.#watchList) this.#initialEventsBody();
    for (let start = 0; start < Math.max(1, this.pods); start += pageSize || this.pods || 1) {
      this.#page(pageSize, start);
    }
  }

  /** A kubeconfig for this server, in a fresh temporary directory. */
  writeKubeconfig(): string {
    const path = join(mkdtempSync(join(tmpdir(), 'bench-sync-kubeconfig-')), 'config');
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'current-context: bench',
        'clusters:',
        '- name: bench',
        '  cluster:',
        `    server: ${this.url}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: bench',
        '  user:',
        '    token: bench-token',
        'contexts:',
        '- name: bench',
        '  context:',
        '    cluster: bench',
        '    user: bench',
        `    namespace: ${ENGINE_NAMESPACE}`,
        '',
      ].join('\n'),
    );
    return path;
  }

  /** Stops listening and breaks every open connection (open WATCHes included). */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname;
    if (path !== `/api/v1/namespaces/${ENGINE_NAMESPACE}/pods` && path !== '/api/v1/pods') {
      status(response, 404, 'NotFound', `the server could not find ${path}`);
      return;
    }
    if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') {
      this.#watch(url.searchParams, response);
      return;
    }
    this.#list(url.searchParams, response);
  }

  #list(query: URLSearchParams, response: ServerResponse): void {
    const limit = query.has('limit') ? Number(query.get('limit')) : 0;
    if (!(Number.isInteger(limit) && limit >= 0)) {
      status(response, 400, 'BadRequest', `invalid limit ${query.get('limit')}`);
      return;
    }
    let start = 0;
    const token = query.get('continue');
    if (token) {
      try {
        const parsed = JSON.parse(
          Buffer.from(token, 'base64url').toString('utf8'),
        ) as ContinueToken;
        if (parsed.rv !== this.resourceVersion || !Number.isInteger(parsed.start))
          throw new Error();
        start = parsed.start;
      } catch {
        status(response, 400, 'BadRequest', 'continue key is not valid');
        return;
      }
    } else {
      this.counts.lists += 1;
      this.counts.firstListAtMs ??= performance.timeOrigin + performance.now();
    }
    this.counts.listPages += 1;
    const body = this.#page(limit, start);
    this.counts.bytesServed += body.length;
    response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
    response.end(body);
  }

  #page(limit: number, start: number): Buffer {
    let pages = this.#pages.get(limit);
    if (!pages) {
      pages = new Map();
      this.#pages.set(limit, pages);
    }
    const cached = pages.get(start);
    if (cached) return cached;
    const end = limit > 0 ? Math.min(this.pods, start + limit) : this.pods;
    const metadata: Record<string, unknown> = { resourceVersion: this.resourceVersion };
    if (end < this.pods) {
      const token: ContinueToken = { rv: this.resourceVersion, start: end };
      metadata.continue = Buffer.from(JSON.stringify(token)).toString('base64url');
      metadata.remainingItemCount = this.pods - end;
    }
    const body = Buffer.from(
      `{"kind":"PodList","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"items":[${this.#items
        .slice(start, end)
        .join(',')}]}`,
    );
    pages.set(start, body);
    return body;
  }

  /** Every pod as an ADDED event, then the bookmark that ends a watch-list's initial events. */
  #initialEventsBody(): Buffer {
    if (this.#initialEvents) return this.#initialEvents;
    const bookmark = JSON.stringify({
      type: 'BOOKMARK',
      object: {
        kind: 'Pod',
        apiVersion: 'v1',
        metadata: {
          resourceVersion: this.resourceVersion,
          annotations: { 'k8s.io/initial-events-end': 'true' },
        },
      },
    });
    // A watch event's object names its kind, as the API server writes it; a list's items do not.
    const events = this.#items.map(
      (item) => `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1",${item.slice(1)}}\n`,
    );
    // Joined as bytes, not as one string: 150,000 pods' events are past V8's longest string.
    this.#initialEvents = Buffer.concat([
      ...events.map((event) => Buffer.from(event)),
      Buffer.from(`${bookmark}\n`),
    ]);
    return this.#initialEvents;
  }

  #watch(query: URLSearchParams, response: ServerResponse): void {
    const initialEvents = query.get('sendInitialEvents') === 'true';
    if (initialEvents && !this.#watchList) {
      // As an API server without watch-list: the client falls back to LIST + WATCH.
      this.counts.watchListsRefused += 1;
      status(response, 400, 'BadRequest', 'sendInitialEvents is not supported by this server');
      return;
    }
    this.counts.watches += 1;
    this.#watches.add(response);
    response.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    response.flushHeaders();
    if (initialEvents) {
      this.counts.watchLists += 1;
      this.counts.lists += 1;
      this.counts.firstListAtMs ??= performance.timeOrigin + performance.now();
      const body = this.#initialEventsBody();
      this.counts.bytesServed += body.length;
      response.write(body);
    }
    const timers: NodeJS.Timeout[] = [];
    if (query.get('allowWatchBookmarks') === 'true') {
      const bookmark = `${JSON.stringify({
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          apiVersion: 'v1',
          metadata: { resourceVersion: this.resourceVersion },
        },
      })}\n`;
      timers.push(setInterval(() => response.write(bookmark), this.#bookmarkIntervalMs));
    }
    const timeoutSeconds = Number(query.get('timeoutSeconds'));
    if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
      timers.push(setTimeout(() => response.end(), timeoutSeconds * 1000));
    }
    response.on('close', () => {
      this.#watches.delete(response);
      for (const timer of timers) clearTimeout(timer);
    });
  }
}
