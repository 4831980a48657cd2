import { EventEmitter } from 'node:events';
import { gunzipSync } from 'node:zlib';
import type { FastifyReply } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { METRICS_CACHE_MS } from '../../routes/metrics.js';
import { acceptsGzip, matchesIfNoneMatch, RenderedCache } from '../../routes/rendered-cache.js';
import { ResponseSlots } from '../../routes/rendered-response.js';
import { STATUS_PAGE_MAX_AGE_MS, STATUS_PAGE_MIN_INTERVAL_MS } from '../../routes/status-page.js';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness, upsert } from '../support/service-harness.js';

afterEach(closeAll);

/** A cache over a counting render, on a hand-moved clock and version. */
function counted(options: { version?: boolean; minIntervalMs?: number; maxAgeMs?: number } = {}) {
  const state = { now: 0, version: 0, renders: 0 };
  const cache = new RenderedCache({
    render: () => `body ${++state.renders} at version ${state.version}`,
    now: () => state.now,
    ...(options.version === false ? {} : { version: () => state.version }),
    minIntervalMs: options.minIntervalMs ?? 1_000,
    maxAgeMs: options.maxAgeMs ?? 10_000,
  });
  return { cache, state };
}

describe('RenderedCache', () => {
  it('serves a second request from the first render when nothing changed', async () => {
    const { cache, state } = counted();
    const first = await cache.get();
    state.now = 9_999;
    const second = await cache.get();
    expect(second).toBe(first);
    expect(state.renders).toBe(1);
  });

  it('renders again once the version moved, but never twice within the minimum interval', async () => {
    const { cache, state } = counted();
    await cache.get();
    state.version = 1;
    state.now = 999;
    expect((await cache.get()).body.toString()).toBe('body 1 at version 0');
    state.now = 1_000;
    expect((await cache.get()).body.toString()).toBe('body 2 at version 1');
    expect(state.renders).toBe(2);
  });

  it('renders again at the maximum age even when the version stayed', async () => {
    const { cache, state } = counted();
    await cache.get();
    state.now = 10_000;
    await cache.get();
    expect(state.renders).toBe(2);
  });

  it('without a version, serves a render for its maximum age (a TTL)', async () => {
    const { cache, state } = counted({ version: false, minIntervalMs: 5_000, maxAgeMs: 5_000 });
    await cache.get();
    state.now = 4_999;
    await cache.get();
    expect(state.renders).toBe(1);
    state.now = 5_000;
    await cache.get();
    expect(state.renders).toBe(2);
  });

  it('shares one render among requests that arrive while it runs', async () => {
    let release!: (text: string) => void;
    const render = vi.fn(() => new Promise<string>((resolve) => (release = resolve)));
    const cache = new RenderedCache({ render, now: () => 0, minIntervalMs: 1, maxAgeMs: 1 });
    const waiting = Array.from({ length: 16 }, () => cache.get());
    release('shared');
    const bodies = await Promise.all(waiting);
    expect(render).toHaveBeenCalledTimes(1);
    expect(new Set(bodies).size).toBe(1);
  });

  it('does not keep a failed render: the next request renders again', async () => {
    let fail = true;
    const cache = new RenderedCache({
      render: () => {
        if (fail) throw new Error('registry broke');
        return 'ok';
      },
      now: () => 0,
      minIntervalMs: 1_000,
      maxAgeMs: 1_000,
    });
    await expect(cache.get()).rejects.toThrow('registry broke');
    fail = false;
    expect((await cache.get()).body.toString()).toBe('ok');
  });

  it('tags each render differently, and caches apart from each other', async () => {
    const { cache, state } = counted();
    const first = await cache.get();
    state.now = 10_000;
    const second = await cache.get();
    expect(first.etag).toMatch(/^"[A-Za-z0-9_-]{8}-1"$/);
    expect(second.etag).not.toBe(first.etag);
    expect((await counted().cache.get()).etag).not.toBe(first.etag);
  });

  it('gzips a render once however many ask, a new render anew, each with its own tag', async () => {
    const { cache, state } = counted();
    const first = await cache.get();
    const [a, b] = await Promise.all([first.gzipped(), first.gzipped()]);
    expect(b).toBe(a);
    expect(await first.gzipped()).toBe(a);
    expect(gunzipSync(a).toString()).toBe(first.body.toString());
    expect(first.gzipEtag).not.toBe(first.etag);
    state.version = 1;
    state.now = 10_000;
    const second = await cache.get();
    expect(gunzipSync(await second.gzipped()).toString()).toBe('body 2 at version 1');
    expect(second.gzipEtag).not.toBe(first.gzipEtag);
  });

  it('reads Accept-Encoding as RFC 9110 says: gzip or *, never at weight 0', () => {
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('br, GZip;q=0.5')).toBe(true);
    expect(acceptsGzip('x-gzip')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('identity')).toBe(false);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('gzip; q=0.0, *')).toBe(false);
    expect(acceptsGzip('*;q=0')).toBe(false);
    expect(acceptsGzip('deflate, br')).toBe(false);
  });

  it('matches If-None-Match as RFC 9110 says: a list, weak tags and *', () => {
    const tag = '"abc"';
    expect(matchesIfNoneMatch(undefined, tag)).toBe(false);
    expect(matchesIfNoneMatch('"abc"', tag)).toBe(true);
    expect(matchesIfNoneMatch('"x", W/"abc"', tag)).toBe(true);
    expect(matchesIfNoneMatch('*', tag)).toBe(true);
    expect(matchesIfNoneMatch('"abd"', tag)).toBe(false);
  });
});

describe('ResponseSlots', () => {
  it('refuses a response beyond its limit until one in flight has closed', () => {
    const slots = new ResponseSlots(2);
    const replies = [0, 1, 2].map(() => ({ raw: new EventEmitter() }) as unknown as FastifyReply);
    expect(slots.take(replies[0]!)).toBe(true);
    expect(slots.take(replies[1]!)).toBe(true);
    expect(slots.take(replies[2]!)).toBe(false);
    replies[0]!.raw.emit('close');
    expect(slots.inFlight).toBe(1);
    expect(slots.take(replies[2]!)).toBe(true);
  });
});

describe('GET / from the cache', () => {
  const world = () => [
    lwsPod({ group: 0, worker: 0, size: 2, podIP: '10.0.0.1' }),
    lwsPod({ group: 0, worker: 1, size: 2, ready: false }),
  ];

  it('does not render the page again for a second request when nothing changed', async () => {
    const { app, service, clock } = await harness({ pods: world() });
    const reads = vi.spyOn(service.cells, 'list');
    const first = await app.inject({ url: '/' });
    await clock.advance(STATUS_PAGE_MAX_AGE_MS - 1);
    const second = await app.inject({ url: '/' });
    expect(reads).toHaveBeenCalledTimes(1);
    expect(second.body).toBe(first.body);
    expect(second.headers.etag).toBe(first.headers.etag);
  });

  it('answers 304 to If-None-Match with the current ETag, and 200 once a cell changed', async () => {
    const { app, clock, push } = await harness({ pods: world() });
    const first = await app.inject({ url: '/' });
    const etag = String(first.headers.etag);
    const again = await app.inject({ url: '/', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);

    await push(upsert(lwsPod({ group: 0, worker: 1, size: 2, ready: true })));
    // Within the minimum interval the change waits; after it, the page shows it.
    expect((await app.inject({ url: '/', headers: { 'if-none-match': etag } })).statusCode).toBe(
      304,
    );
    await clock.advance(STATUS_PAGE_MIN_INTERVAL_MS);
    const changed = await app.inject({ url: '/', headers: { 'if-none-match': etag } });
    expect(changed.statusCode).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(changed.body).not.toBe(first.body);
  });
});

describe("GET / gzip'd", () => {
  it("serves the same page gzip'd to a client that accepts gzip, with its own ETag", async () => {
    const { app } = await harness({ pods: [lwsPod({ group: 0, worker: 0, podIP: '10.0.0.1' })] });
    const plain = await app.inject({ url: '/' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('accept-encoding');
    const zipped = await app.inject({ url: '/', headers: { 'accept-encoding': 'gzip, br' } });
    expect(zipped.statusCode).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('accept-encoding');
    expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.body);
    expect(zipped.rawPayload.length).toBeLessThan(plain.rawPayload.length);
    expect(zipped.headers.etag).not.toBe(plain.headers.etag);

    const notModified = await app.inject({
      url: '/',
      headers: { 'accept-encoding': 'gzip', 'if-none-match': String(zipped.headers.etag) },
    });
    expect(notModified.statusCode).toBe(304);
    // The plain tag names the other representation: a client without gzip gets it in full.
    const other = await app.inject({
      url: '/',
      headers: { 'if-none-match': String(zipped.headers.etag) },
    });
    expect(other.statusCode).toBe(200);
    expect(other.body).toBe(plain.body);
  });
});

describe('GET /metrics from the cache', () => {
  it('renders the registry once for any number of scrapes within METRICS_CACHE_MS', async () => {
    const { app, service, clock } = await harness();
    const render = vi.spyOn(service.metrics, 'render');
    const bodies = new Set<string>();
    for (let i = 0; i < 5; i += 1) bodies.add((await app.inject({ url: '/metrics' })).body);
    expect(render).toHaveBeenCalledTimes(1);
    expect(bodies.size).toBe(1);
    await clock.advance(METRICS_CACHE_MS);
    await app.inject({ url: '/metrics' });
    expect(render).toHaveBeenCalledTimes(2);
  });
});
