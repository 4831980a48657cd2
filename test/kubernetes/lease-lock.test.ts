import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaderElector, LeaseConflictError, type LeaseRecord } from '../../src/index.js';
import { ResourceApiError } from '../../src/kubernetes/client/resource-api-error.js';
import {
  DEFAULT_LEASE_REQUEST_TIMEOUT_MS,
  KubernetesLeaseLock,
  LEASE_MAX_RESPONSE_BYTES,
} from '../../src/kubernetes/resources/lease-lock.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeLeaseApiServer } from '../support/fake-lease-apiserver.js';
import { until } from '../support/until.js';

const PATH = '/apis/coordination.k8s.io/v1/namespaces/ns/leases';

const record = (holderIdentity: string, extra: Partial<LeaseRecord> = {}): LeaseRecord => ({
  holderIdentity,
  leaseDurationSeconds: 15,
  acquireTime: '2026-11-30T20:41:07.123000Z',
  renewTime: '2026-11-30T20:41:07.123000Z',
  leaseTransitions: 0,
  ...extra,
});

let server: FakeLeaseApiServer;
let lock: KubernetesLeaseLock;
const signal = new AbortController().signal;

beforeEach(async () => {
  server = await FakeLeaseApiServer.start();
  lock = new KubernetesLeaseLock({
    connection: server.connection(),
    namespace: 'ns',
    name: 'leader',
  });
});
afterEach(async () => {
  await server.close();
});

describe('KubernetesLeaseLock', () => {
  it('describes itself as namespace/name and refuses an empty name', () => {
    expect(lock.describe()).toBe('ns/leader');
    expect(
      () => new KubernetesLeaseLock({ connection: server.connection(), namespace: 'ns', name: '' }),
    ).toThrow(RangeError);
  });

  it('reads a missing Lease (404) as null, with the connection’s credentials', async () => {
    await expect(lock.get(signal)).resolves.toBeNull();
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET ${PATH}/leader`]);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer test-token');
    expect(server.requests[0]?.headers.accept).toBe('application/json');
  });

  it('creates with POST to the collection and reads back the same MicroTimes and a resourceVersion', async () => {
    const created = await lock.create(record('a'), signal);
    expect(created).toEqual({ record: record('a'), resourceVersion: '101' });
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: PATH,
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'leader', namespace: 'ns' },
        spec: record('a'),
      },
    });
    await expect(lock.get(signal)).resolves.toEqual(created);
  });

  it('turns 409 on create into LeaseConflictError', async () => {
    server.put({ metadata: { name: 'leader', namespace: 'ns' }, spec: record('b') });
    await expect(lock.create(record('a'), signal)).rejects.toBeInstanceOf(LeaseConflictError);
  });

  it('updates with PUT at the given resourceVersion, and a stale one gives LeaseConflictError', async () => {
    const created = await lock.create(record('a'), signal);
    const renewed = await lock.update(
      record('a', { renewTime: '2026-11-30T20:41:09.123000Z' }),
      created.resourceVersion,
      signal,
    );
    expect(renewed.resourceVersion).toBe('102');
    expect(renewed.record.renewTime).toBe('2026-11-30T20:41:09.123000Z');
    expect(server.requests[1]).toMatchObject({
      method: 'PUT',
      path: `${PATH}/leader`,
      body: { metadata: { resourceVersion: '101' } },
    });
    const stale = lock.update(record('a'), created.resourceVersion, signal);
    await expect(stale).rejects.toBeInstanceOf(LeaseConflictError);
    await expect(stale).rejects.toThrow(/the object has been modified/);
  });

  it('keeps the labels, annotations and unknown spec fields of the Lease it read', async () => {
    server.put({
      metadata: { name: 'leader', namespace: 'ns', labels: { team: 'x' }, annotations: { a: 'b' } },
      spec: { ...record('b'), strategy: 'OldestEmulationVersion' },
    });
    const current = await lock.get(signal);
    await lock.update(record('a', { leaseTransitions: 1 }), current?.resourceVersion ?? '', signal);
    expect(server.lease).toMatchObject({
      metadata: { labels: { team: 'x' }, annotations: { a: 'b' } },
      spec: { ...record('a', { leaseTransitions: 1 }), strategy: 'OldestEmulationVersion' },
    });
  });

  it('sends a released record with an empty holder and reads absent spec fields as zero values', async () => {
    const created = await lock.create(record('a'), signal);
    await lock.update(record('', { leaseDurationSeconds: 1 }), created.resourceVersion, signal);
    expect(server.requests[1]).toMatchObject({ body: { spec: { holderIdentity: '' } } });
    server.put({ metadata: { name: 'leader', namespace: 'ns' }, spec: {} });
    await expect(lock.get(signal)).resolves.toEqual({
      resourceVersion: '103',
      record: {
        holderIdentity: '',
        leaseDurationSeconds: 0,
        acquireTime: null,
        renewTime: null,
        leaseTransitions: 0,
      },
    });
  });

  it('rejects other statuses with a ResourceApiError naming the request, the status and the server’s message', async () => {
    server.next({
      status: 403,
      body: { kind: 'Status', reason: 'Forbidden', message: 'no leases for you' },
    });
    const failed = lock.get(signal);
    await expect(failed).rejects.toBeInstanceOf(ResourceApiError);
    await expect(failed).rejects.toThrow(
      /^GET Lease ns\/leader: HTTP 403 Forbidden: no leases for you$/,
    );
    await expect(failed).rejects.toMatchObject({ statusCode: 403, retriable: false });
  });

  it('rejects with the signal’s reason when it aborts mid-request, and sends nothing when already aborted', async () => {
    server.next('hang');
    const controller = new AbortController();
    const pending = lock.get(controller.signal);
    await until(() => server.requests.length > 0, { what: 'the request to reach the server' });
    const reason = new Error('term over');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect(lock.update(record('a'), '1', AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up on a request the API server never answers, after its request timeout', async () => {
    // A real (short) timeout: the bound is the transport's, as client-go's HTTP client timeout is.
    const bounded = new KubernetesLeaseLock({
      connection: server.connection(),
      namespace: 'ns',
      name: 'pool-controller',
      requestTimeoutMs: 50,
    });
    server.next('hang');
    await expect(bounded.get(signal)).rejects.toThrow('no answer within 50 ms');
  });

  it('bounds every request by default (client-go: half the default renew deadline)', () => {
    expect(DEFAULT_LEASE_REQUEST_TIMEOUT_MS).toBe(5_000);
    expect(
      () =>
        new KubernetesLeaseLock({
          connection: server.connection(),
          namespace: 'ns',
          name: 'leader',
          requestTimeoutMs: 0,
        }),
    ).toThrow(RangeError);
  });

  it('carries a LeaderElector through acquire, renew and release with the expected requests', async () => {
    const clock = new FakeClock();
    const elector = new LeaderElector({
      lock,
      identity: 'a',
      clock,
      wallClock: () => new Date(Date.UTC(2026, 10, 30, 20, 41, 7, 123)),
    });
    const stop = new AbortController();
    const done = elector.run(stop.signal);
    await until(() => elector.isLeader(), { what: 'the elector to lead' });
    const renewed = server.requests.length + 2;
    await clock.advance(2_000);
    await until(() => server.requests.length >= renewed, { what: 'the renewal requests' });
    stop.abort();
    await done;
    expect(server.sequence()).toEqual([
      'GET leases/leader',
      'POST ns/leases',
      'GET leases/leader',
      'PUT leases/leader',
      'PUT leases/leader',
    ]);
    expect(server.lease).toMatchObject({ spec: { holderIdentity: '', leaseDurationSeconds: 1 } });
    expect(elector.leader()).toBeNull();
  });
});

describe('KubernetesLeaseLock bounds every answer', () => {
  const raws: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.all(raws.splice(0).map((close) => close()));
  });

  /** A raw server for what the fake does not model: endless and stalled bodies. */
  async function raw(
    handler: (request: IncomingMessage, response: ServerResponse) => void,
  ): Promise<string> {
    const http = createServer(handler);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    raws.push(async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    });
    return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  }

  const calls: Array<[string, (lock: KubernetesLeaseLock, s: AbortSignal) => Promise<unknown>]> = [
    ['GET', (l, s) => l.get(s)],
    ['CREATE', (l, s) => l.create(record('a'), s)],
    ['UPDATE', (l, s) => l.update(record('a'), '7', s)],
  ];

  it.each(calls)(
    'refuses a %s answer past 1 MiB without reading the rest',
    async (method, call) => {
      let closedConnection = false;
      const piece = Buffer.alloc(64 * 1024, ' ');
      const url = await raw((request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.once('close', () => {
          closedConnection = true;
        });
        const pump = (): void => {
          while (!response.destroyed)
            if (!response.write(piece)) return void response.once('drain', pump);
        };
        pump();
      });
      const bounded = new KubernetesLeaseLock({
        connection: { server: url, requestOptions: async () => ({}) },
        namespace: 'ns',
        name: 'leader',
        clock: new FakeClock(),
      });
      const error = await call(bounded, signal).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResourceApiError);
      expect(error).toMatchObject({
        statusCode: undefined,
        retriable: false,
        message: `${method} Lease ns/leader: response larger than ${LEASE_MAX_RESPONSE_BYTES} bytes; refused`,
      });
      expect(LEASE_MAX_RESPONSE_BYTES).toBe(1024 * 1024);
      await until(() => closedConnection, { what: 'the client to close the connection' });
    },
  );

  it.each(calls)(
    'gives up on a %s answer that stops after its head, on the injected clock',
    async (method, call) => {
      let answered = false;
      const url = await raw((request, response) => {
        request.resume();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write('{"kind":"Lease","metadata":', () => {
          answered = true;
        });
      });
      const clock = new FakeClock();
      const bounded = new KubernetesLeaseLock({
        connection: { server: url, requestOptions: async () => ({}) },
        namespace: 'ns',
        name: 'leader',
        clock,
      });
      const pending = call(bounded, signal).catch((e: unknown) => e);
      await until(() => answered, { what: 'the server to answer' });
      await clock.advance(DEFAULT_LEASE_REQUEST_TIMEOUT_MS - 1);
      expect(clock.pendingTimers).toBe(1);
      await clock.advance(1);
      expect(await pending).toEqual(
        new Error(
          `${method} Lease ns/leader: no answer within ${DEFAULT_LEASE_REQUEST_TIMEOUT_MS} ms`,
        ),
      );
    },
  );
});
