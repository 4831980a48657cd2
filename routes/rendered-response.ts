/**
 * Serving a `RenderedCache`'s body: at most so many responses in flight per endpoint (a 503 with
 * `Retry-After` beyond), gzip'd when the client accepts it, the `ETag`, and a 304 when the client
 * already has the body.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from './http-error.js';
import { acceptsGzip, matchesIfNoneMatch, type RenderedCache } from './rendered-cache.js';

/**
 * Responses one cached endpoint sends at once. Each pins its body until the client has read it,
 * and a client that reads slowly (or never) pins an old one after the cache moved on: the limit
 * bounds that memory to this many bodies (16 × 3.3 MiB at 5,000 pools). Prometheus scrapes with
 * one or two servers and people open a page now and then, so 16 is never reached but by a flood.
 */
const MAX_RENDERED_RESPONSES = 16;

/** `Retry-After` on a refusal: a render is at most a second old, so a second later is worth it. */
const RETRY_AFTER_S = 1;

/** What `sendRendered` needs of an endpoint: its cache, its slots and how to label the body. */
interface RenderedEndpoint {
  cache: RenderedCache;
  slots: ResponseSlots;
  /** The path, for the refusal's message. */
  path: string;
}

/** The responses of one endpoint in flight, up to `limit`. */
export class ResponseSlots {
  #inFlight = 0;
  constructor(readonly limit: number = MAX_RENDERED_RESPONSES) {}

  /** Responses being sent now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Takes a slot until `reply`'s response closes; `false` when every slot is taken. */
  take(reply: FastifyReply): boolean {
    if (this.#inFlight >= this.limit) return false;
    this.#inFlight += 1;
    reply.raw.once('close', () => {
      this.#inFlight -= 1;
    });
    return true;
  }
}

/**
 * Answers `request` from `endpoint`'s cache: 503 when its slots are taken, 304 when the request's
 * `If-None-Match` names the current body, else the body with its `ETag` — gzip'd (compressed once
 * per render) when the request's `Accept-Encoding` allows, as its own representation with its own
 * tag. The caller sets the content type and any other headers first.
 */
export async function sendRendered(
  request: FastifyRequest,
  reply: FastifyReply,
  endpoint: RenderedEndpoint,
): Promise<FastifyReply> {
  if (!endpoint.slots.take(reply)) {
    reply.header('retry-after', String(RETRY_AFTER_S));
    throw new HttpError(
      503,
      `${endpoint.slots.limit} responses of ${endpoint.path} are being sent already; retry in ${RETRY_AFTER_S} s`,
    );
  }
  const rendered = await endpoint.cache.get();
  const gzip = acceptsGzip(request.headers['accept-encoding']);
  const etag = gzip ? rendered.gzipEtag : rendered.etag;
  reply.header('vary', 'accept-encoding').header('etag', etag);
  if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) {
    return reply.code(304).send();
  }
  if (!gzip) return reply.send(rendered.body);
  const body = await rendered.gzipped();
  return reply.header('content-encoding', 'gzip').send(body);
}
