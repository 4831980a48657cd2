import { afterEach, describe, expect, it } from 'vitest';
import { lwsPod } from '../support/lws-pod.js';
import { closeAll, harness } from '../support/service-harness.js';
import { untilAsync } from '../support/until.js';

afterEach(closeAll);

const pods = () => [
  lwsPod({ group: 0, worker: 0 }),
  lwsPod({ group: 1, worker: 0 }),
  lwsPod({ namespace: 'other', group: 1, worker: 0 }),
];

/** `workqueue_adds_total`: grows by one per key a POST queued (read from the registry, uncached). */
async function adds(service: Awaited<ReturnType<typeof harness>>['service']): Promise<number> {
  const text = await service.metrics.render();
  return Number(/^workqueue_adds_total\{[^}]*\} (\d+)$/m.exec(text)?.[1]);
}

describe('POST /api/v1/cells/{cell}/reconcile', () => {
  it('queues the cell and answers 202 with what was queued', async () => {
    const { app, service } = await harness({ pods: pods() });
    const before = await adds(service);
    const res = await app.inject({ method: 'POST', url: '/api/v1/cells/engine-00000/reconcile' });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ source: 'kubernetes', count: 1, queued: ['ns/engine-00000'] });
    await untilAsync(async () => (await adds(service)) === before + 1, {
      what: 'the queue counted one add',
    });
    expect(await adds(service)).toBe(before + 1);
  });

  it('answers 404 for an unknown cell and 409 for an ambiguous one', async () => {
    const { app } = await harness({ pods: pods() });
    const missing = await app.inject({ method: 'POST', url: '/api/v1/cells/nope/reconcile' });
    expect(missing.statusCode).toBe(404);
    const ambiguous = await app.inject({
      method: 'POST',
      url: '/api/v1/cells/engine-00001/reconcile',
    });
    expect(ambiguous.statusCode).toBe(409);
    const picked = await app.inject({
      method: 'POST',
      url: '/api/v1/cells/engine-00001/reconcile?namespace=other',
    });
    expect(picked.json().queued).toEqual(['other/engine-00001']);
  });
});

describe('POST /api/v1/reconcile', () => {
  it('queues every parent and answers 202 with the keys', async () => {
    const { app, service } = await harness({ pods: pods() });
    const before = await adds(service);
    const res = await app.inject({ method: 'POST', url: '/api/v1/reconcile' });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      count: 3,
      queued: ['ns/engine-00000', 'ns/engine-00001', 'other/engine-00001'],
    });
    await untilAsync(async () => (await adds(service)) === before + 3, {
      what: 'the queue counted three adds',
    });
    expect(await adds(service)).toBe(before + 3);
  });
});

describe('who may POST without --admin-token-file', () => {
  for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
    it(`accepts the loopback client ${address}`, async () => {
      const { app } = await harness({ pods: pods() });
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/reconcile',
        remoteAddress: address,
      });
      expect(res.statusCode).toBe(202);
    });
  }

  for (const address of [
    '10.1.2.3',
    '::ffff:10.1.2.3',
    '2001:db8::1',
    '128.0.0.1',
    '127.0.0.6',
    '127.10.20.30',
  ]) {
    it(`refuses ${address} with a 403 that says why`, async () => {
      const { app } = await harness({ pods: pods() });
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/cells/engine-00000/reconcile',
        remoteAddress: address,
      });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({
        status: 403,
        error: 'Forbidden',
        message: `without --admin-token-file, POST endpoints accept only loopback clients (e.g. through kubectl port-forward); this request came from ${address}`,
      });
    });
  }

  it('ignores X-Forwarded-For: the socket peer decides', async () => {
    const { app } = await harness({ pods: pods() });
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/reconcile',
      remoteAddress: '10.1.2.3',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    });
    expect(res.statusCode).toBe(403);
  });

  it('keeps reads open to everyone', async () => {
    const { app } = await harness({ pods: pods() });
    const res = await app.inject({ url: '/api/v1/cells', remoteAddress: '10.1.2.3' });
    expect(res.statusCode).toBe(200);
  });
});

describe('who may POST with --admin-token-file', () => {
  const adminToken = 's3cret-token';

  it('answers 401 with a Bearer challenge without an Authorization header, even from loopback', async () => {
    const { app } = await harness({ pods: pods(), adminToken });
    const res = await app.inject({ method: 'POST', url: '/api/v1/reconcile' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="pool-controller"');
    expect(res.json().message).toBe(
      'this endpoint needs an Authorization: Bearer <token> header (see --admin-token-file)',
    );
  });

  it('answers 401 for a wrong token or another scheme', async () => {
    const { app } = await harness({ pods: pods(), adminToken });
    for (const authorization of ['Bearer nope', `Basic ${adminToken}`, `Bearer ${adminToken}x`]) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/reconcile',
        headers: { authorization },
      });
      expect(res.statusCode).toBe(401);
    }
  });

  it('accepts the right token from any address', async () => {
    const { app } = await harness({ pods: pods(), adminToken });
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/cells/engine-00000/reconcile',
      remoteAddress: '10.9.8.7',
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(res.statusCode).toBe(202);
  });

  it('checks the token before looking the cell up, so a 404 reveals nothing', async () => {
    const { app } = await harness({ pods: pods(), adminToken });
    const res = await app.inject({ method: 'POST', url: '/api/v1/cells/nope/reconcile' });
    expect(res.statusCode).toBe(401);
  });
});
