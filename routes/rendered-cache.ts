/**
 * A read endpoint whose answer grows with the fleet (`GET /`, `GET /metrics`: megabytes at
 * thousands of pools), rendered once and served to every request from the cache until the state
 * changed, with an `ETag` so a client that has it gets a 304, and gzip'd at most once per render
 * for the clients that accept it. Issue 36: rendered per request, 16 looping clients at 5,000
 * pools kept the event loop busy enough that probes timed out.
 */
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/**
 * zlib's own default level: one compression serves every gzip request until the next render (at
 * most one per few seconds), so the bytes every request copies into its socket matter more than
 * the one compression's CPU, which runs in libuv's thread pool, off the event loop. A page of a
 * few MiB of repetitive markup compresses about tenfold.
 */
const GZIP_LEVEL = 6;

/** One render: the bytes every request is sent, and their strong validator. */
interface RenderedBody {
  readonly body: Buffer;
  /**
   * A strong entity tag (quoted): this cache's random prefix and the render's number, so a tag
   * names one body for the life of the process (hashing megabytes per render would cost more
   * than a 200 after a render that changed nothing).
   */
  readonly etag: string;
  /** When it was rendered, on the cache's clock. */
  readonly renderedAt: number;
  /** The strong entity tag of the gzip'd body: another representation, so another tag. */
  readonly gzipEtag: string;
  /**
   * The body gzip'd: compressed on the first ask (off the event loop) and kept with the render,
   * so any number of requests cost one compression per render. A failed compression is not kept.
   */
  gzipped(): Promise<Buffer>;
}

/** How a `RenderedCache` decides that a render is stale. */
interface RenderedCacheOptions {
  /** Renders the body from the state now. */
  render: () => string | Promise<string>;
  /** The clock renders are timed on (the control plane's). */
  now: () => number;
  /**
   * The state's version: a body rendered at one version is served until it moves. Without it the
   * body is served for `maxAgeMs` (a TTL), as for values no event announces.
   */
  version?: () => number;
  /**
   * No two renders closer than this, whatever changes: the cost per second is bounded by this,
   * not by the request rate or the rate of change.
   */
  minIntervalMs: number;
  /** A body this old is rendered again even at the same version (parts change without one). */
  maxAgeMs: number;
}

/**
 * The one rendered body of an endpoint. Concurrent requests for a stale body share one render
 * (single flight); a failed render is not cached, so the next request tries again.
 */
export class RenderedCache {
  #current: { rendered: RenderedBody; version: number | undefined } | undefined;
  #rendering: Promise<RenderedBody> | undefined;
  #renders = 0;
  /** Random per cache, so a tag from another replica or an earlier process never matches. */
  readonly #tagPrefix = randomBytes(6).toString('base64url');

  constructor(private readonly options: RenderedCacheOptions) {}

  /** How many renders there have been: what tests read to see a request was served cached. */
  get renders(): number {
    return this.#renders;
  }

  /** The body to serve now: the cached one when fresh, else a new render (shared with others). */
  get(): Promise<RenderedBody> {
    const current = this.#current;
    if (current && this.#fresh(current.rendered, current.version)) {
      return Promise.resolve(current.rendered);
    }
    this.#rendering ??= this.#render().finally(() => {
      this.#rendering = undefined;
    });
    return this.#rendering;
  }

  #fresh(rendered: RenderedBody, version: number | undefined): boolean {
    const age = this.options.now() - rendered.renderedAt;
    if (age < this.options.minIntervalMs) return true;
    if (age >= this.options.maxAgeMs) return false;
    return this.options.version !== undefined && this.options.version() === version;
  }

  async #render(): Promise<RenderedBody> {
    // Read before rendering: a change during the render moves the version past this one, so the
    // body is rendered again next time rather than served as current.
    const version = this.options.version?.();
    const renderedAt = this.options.now();
    const body = Buffer.from(await this.options.render());
    this.#renders += 1;
    let gzipped: Promise<Buffer> | undefined;
    const rendered: RenderedBody = {
      body,
      etag: `"${this.#tagPrefix}-${this.#renders}"`,
      gzipEtag: `"${this.#tagPrefix}-${this.#renders}-gzip"`,
      renderedAt,
      gzipped: () => {
        gzipped ??= gzipAsync(body, { level: GZIP_LEVEL }).catch((error: unknown) => {
          gzipped = undefined;
          throw error;
        });
        return gzipped;
      },
    };
    this.#current = { rendered, version };
    return rendered;
  }
}

/**
 * Whether an `Accept-Encoding` header accepts gzip (RFC 9110 §12.5.3): `gzip` (or `x-gzip`), else
 * `*`, with a weight above 0. No header: identity only, as `curl` asks without `--compressed`.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let gzipWeight: number | undefined;
  let anyWeight: number | undefined;
  for (const entry of header.split(',')) {
    const [coding = '', ...parameters] = entry.split(';').map((part) => part.trim());
    const q = parameters.find((p) => /^q\s*=/i.test(p));
    const weight = q === undefined ? 1 : Number(q.slice(q.indexOf('=') + 1).trim());
    const name = coding.toLowerCase();
    if (name === 'gzip' || name === 'x-gzip') gzipWeight = weight;
    else if (name === '*') anyWeight = weight;
  }
  const weight = gzipWeight ?? anyWeight ?? 0;
  return Number.isFinite(weight) && weight > 0;
}

/**
 * Whether an `If-None-Match` header names `etag` (RFC 9110 §13.1.2: weak comparison, `*`
 * matches any current body), so the answer may be a 304.
 */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => {
    const candidate = tag.trim();
    return candidate === '*' || candidate.replace(/^W\//, '') === bare;
  });
}
