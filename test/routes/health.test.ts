import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

describe('GET /healthz', () => {
  it('answers 200 ok in plain text, before the loop has even started', async () => {
    const { app } = await harness({ start: false });
    const res = await app.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('ok');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('lists its checks with ?verbose and ends with "healthz check passed"', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/healthz?verbose' });
    expect(res.body).toBe('[+]ping ok\n[+]leader-election ok\nhealthz check passed\n');
  });

  it('answers one check at /healthz/<name>', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/healthz/ping' });
    expect([res.statusCode, res.body]).toEqual([200, 'ok']);
  });
});

describe('GET /readyz', () => {
  it('fails before the store has synced, one line per check and "readyz check failed"', async () => {
    const { app } = await harness({ start: false });
    const res = await app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe(
      '[-]store-synced failed: reason withheld\n[+]watch-healthy ok\n[+]shutdown ok\nreadyz check failed\n',
    );
  });

  it('passes once synced with a healthy watch: 200 ok', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/readyz' });
    expect([res.statusCode, res.body]).toEqual([200, 'ok']);
    const verbose = await app.inject({ url: '/readyz?verbose=1' });
    expect(verbose.body).toBe(
      '[+]store-synced ok\n[+]watch-healthy ok\n[+]shutdown ok\nreadyz check passed\n',
    );
  });

  it('fails while the watch is not healthy, even after the sync', async () => {
    const { app, podSource } = await harness();
    podSource.current = {
      ...podSource.current,
      healthy: false,
      phase: 'backoff',
      lastError: 'connection refused',
    };
    const res = await app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toContain('[-]watch-healthy failed: reason withheld\n');
    expect(res.body).not.toContain('connection refused');
  });

  it('withholds the reason at /readyz/<name> too, as /readyz?verbose does', async () => {
    const { app, podSource } = await harness();
    podSource.current = {
      ...podSource.current,
      healthy: false,
      phase: 'backoff',
      lastError: 'password: hunter2',
    };
    const res = await app.inject({ url: '/readyz/watch-healthy' });
    expect(res.statusCode).toBe(500);
    expect(res.body).toBe('internal server error: reason withheld\n');
    const verbose = await app.inject({ url: '/readyz?verbose' });
    expect(verbose.body).toContain('[-]watch-healthy failed: reason withheld\n');
    expect(`${res.body}${verbose.body}`).not.toContain('hunter2');
    expect((await app.inject({ url: '/readyz/store-synced' })).body).toBe('ok');
  });

  it('skips an excluded check and says so', async () => {
    const { app, podSource } = await harness();
    podSource.current = { ...podSource.current, healthy: false };
    const res = await app.inject({ url: '/readyz?exclude=watch-healthy' });
    expect([res.statusCode, res.body]).toEqual([200, 'ok']);
    const verbose = await app.inject({ url: '/readyz?exclude=watch-healthy&verbose' });
    expect(verbose.body).toContain('[+]watch-healthy excluded: ok\n');
  });

  it('accepts several excludes and warns about names that match no check', async () => {
    const { app } = await harness({ start: false });
    const res = await app.inject({
      url: '/readyz?exclude=store-synced&exclude=nonsense&exclude=also-not&verbose',
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(
      '[+]store-synced excluded: ok\n[+]watch-healthy ok\n[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for "also-not","nonsense"\nreadyz check passed\n',
    );
  });

  it('fails once shutdown has begun, so traffic drains before the server closes', async () => {
    const { app, service } = await harness();
    service.beginShutdown();
    const res = await app.inject({ url: '/readyz/shutdown' });
    expect([res.statusCode, res.body]).toEqual([500, 'internal server error: reason withheld\n']);
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
  });

  it('answers 404 with the list of checks for an unknown check name', async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/readyz/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      status: 404,
      error: 'Not Found',
      message: 'no readyz check "nope"; checks: store-synced, watch-healthy, shutdown',
    });
  });
});
