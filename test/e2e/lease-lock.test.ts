/**
 * Leader election against a real kube-apiserver: two `LeaderElector`s with short durations on one
 * coordination.k8s.io/v1 Lease through `KubernetesLeaseLock`. Exactly one leads at any sampled
 * moment, a release hands the lease over within a few retry periods (not a whole lease), and the
 * MicroTimes written come back from the server byte for byte.
 *
 * The electors reach the API server through the fault proxy (./fault-proxy.ts), which can hold a
 * renewal's answer back, so the leader can be cancelled with a renewal applied but not yet answered.
 * Waits poll real time; no assertion rests on a fixed sleep.
 */

import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectLeaseLock,
  formatMicroTime,
  type KubernetesLeaseLock,
  LeaderElector,
  LeaseConflictError,
  type LeaseLock,
} from '../../src/index.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { FaultProxy } from './fault-proxy.js';
import { waitUntil } from './support-reflector.js';

/** Short but sane: renew deadline > 1.2 × retry period, lease > renew deadline. */
const TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 } as const;

/** How long the proxy holds a renewal's answer back, so the leader can be cancelled mid-renewal. */
const ANSWER_HELD_MS = 400;
/** A renewal on the wire this long has been applied by the API server (a few ms on loopback). */
const APPLIED_AFTER_MS = 150;

let env: KubeEnvironment;
/** Between the electors and the API server, so a renewal's answer can be held back. */
let proxy: FaultProxy;
let proxyKubeconfig: string;
beforeAll(async () => {
  env = await startKubeEnvironment({ watchCache: true });
  proxy = await FaultProxy.start({ upstream: env.server, upstreamCaPath: env.caPath });
  proxyKubeconfig = proxy.writeKubeconfig(join(env.stateDir, 'lease.proxy.json'), env.token);
});
afterAll(async () => {
  await proxy?.close();
  await env?.stop();
});

function lockFor(
  namespace: string,
  name: string,
  kubeconfigPath = env.kubeconfigPath,
): Promise<KubernetesLeaseLock> {
  return connectLeaseLock({ kubeconfigPath, namespace, name });
}

/**
 * The real lock, counting its writes in flight, so a test can cancel the leader either between
 * two renewals or with one on the wire. The second is the case that once cost a whole lease: the
 * abandoned renewal had already moved the Lease's resourceVersion on the server, the release sent
 * on the old one was refused, and the follower waited for expiry.
 */
class WriteTrackingLock implements LeaseLock {
  writesInFlight = 0;
  lastWriteStartedAt = 0;
  lastWriteSettledAt = 0;
  constructor(private readonly lock: LeaseLock) {}
  get(signal: AbortSignal) {
    return this.lock.get(signal);
  }
  create(...args: Parameters<LeaseLock['create']>) {
    return this.#tracked(() => this.lock.create(...args));
  }
  update(...args: Parameters<LeaseLock['update']>) {
    return this.#tracked(() => this.lock.update(...args));
  }
  describe(): string {
    return this.lock.describe();
  }
  async #tracked<T>(write: () => Promise<T>): Promise<T> {
    this.writesInFlight += 1;
    this.lastWriteStartedAt = Date.now();
    try {
      return await write();
    } finally {
      this.writesInFlight -= 1;
      this.lastWriteSettledAt = Date.now();
    }
  }
}

/** Resolves just after a renewal settled, when the next one is most of a retry period away. */
async function betweenRenewals(lock: WriteTrackingLock): Promise<void> {
  const deadline = Date.now() + 10 * TIMING.retryPeriodMs;
  while (Date.now() < deadline) {
    const sinceWrite = Date.now() - lock.lastWriteSettledAt;
    if (lock.writesInFlight === 0 && sinceWrite < TIMING.retryPeriodMs / 5) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('no quiet moment between two renewals in ten retry periods');
}

/**
 * Resolves while a renewal is on the wire, applied by the API server but not yet answered: the
 * proxy holds answers back for a moment, and the renewal has been out long enough to have landed.
 */
async function duringRenewal(lock: WriteTrackingLock): Promise<void> {
  await betweenRenewals(lock);
  proxy.setFault({ kind: 'delay', ms: ANSWER_HELD_MS });
  try {
    const deadline = Date.now() + 10 * TIMING.retryPeriodMs;
    while (Date.now() < deadline) {
      const onTheWire = Date.now() - lock.lastWriteStartedAt;
      if (lock.writesInFlight > 0 && onTheWire >= APPLIED_AFTER_MS) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error('no renewal on the wire in ten retry periods');
  } finally {
    proxy.clear();
  }
}

describe('KubernetesLeaseLock against kube-apiserver', () => {
  it('round-trips MicroTimes and answers 404 and 409 as the LeaseLock contract says', async () => {
    const namespace = await env.createNamespace('lease');
    const lock = await lockFor(namespace, 'roundtrip');
    const signal = new AbortController().signal;
    await expect(lock.get(signal)).resolves.toBeNull();
    const stamp = formatMicroTime(new Date(Date.UTC(2026, 10, 30, 20, 41, 7, 123)));
    const record = {
      holderIdentity: 'a',
      leaseDurationSeconds: 4,
      acquireTime: stamp,
      renewTime: stamp,
      leaseTransitions: 0,
    };
    const created = await lock.create(record, signal);
    expect(created.record).toEqual(record);
    await expect(lock.create(record, signal)).rejects.toBeInstanceOf(LeaseConflictError);
    const read = await lock.get(signal);
    expect(read).toEqual(created);
    expect(read?.record.renewTime).toBe('2026-11-30T20:41:07.123000Z');

    const later = formatMicroTime(new Date(Date.UTC(2026, 10, 30, 20, 41, 9, 5)));
    const renewed = await lock.update(
      { ...record, renewTime: later },
      created.resourceVersion,
      signal,
    );
    expect(renewed.record.renewTime).toBe('2026-11-30T20:41:09.005000Z');
    await expect(
      lock.update({ ...record, holderIdentity: 'b' }, created.resourceVersion, signal),
    ).rejects.toBeInstanceOf(LeaseConflictError);

    // What another client sees: a typed Lease whose times are the instants written.
    const api = env.kubeConfig.makeApiClient(CoordinationV1Api);
    const lease = await api.readNamespacedLease({ name: 'roundtrip', namespace });
    expect(lease.spec?.holderIdentity).toBe('a');
    expect(new Date(lease.spec?.renewTime ?? 0).getTime()).toBe(
      Date.UTC(2026, 10, 30, 20, 41, 9, 5),
    );
  });

  it.each([
    ['between two renewals', betweenRenewals],
    ['with a renewal on the wire', duringRenewal],
  ])(
    'lets exactly one of two electors lead, and hands over within a few retry periods after a release (cancelled %s)',
    async (_when, cancelMoment) => {
      const namespace = await env.createNamespace('lease');
      const leaders: string[] = [];
      const electors = new Map<
        string,
        {
          elector: LeaderElector;
          lock: WriteTrackingLock;
          logger: RecordingLogger;
          stop: AbortController;
          done?: Promise<void>;
        }
      >();
      for (const identity of ['a', 'b']) {
        const lock = new WriteTrackingLock(await lockFor(namespace, 'leader', proxyKubeconfig));
        const logger = new RecordingLogger();
        const elector = new LeaderElector({
          lock,
          identity,
          ...TIMING,
          logger,
          onStartedLeading: () => {
            leaders.push(identity);
          },
        });
        electors.set(identity, { elector, lock, logger, stop: new AbortController() });
      }
      for (const entry of electors.values()) entry.done = entry.elector.run(entry.stop.signal);
      const leading = (): string[] =>
        [...electors].filter(([, e]) => e.elector.isLeader()).map(([id]) => id);
      try {
        await waitUntil('one elector leads', () => leading().length === 1);
        const first = leading()[0] as string;
        const second = first === 'a' ? 'b' : 'a';

        // Several renewals (and several of the follower's attempts): never two, never none.
        const until = Date.now() + 3 * TIMING.retryPeriodMs * 2;
        while (Date.now() < until) {
          expect(leading()).toEqual([first]);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(electors.get(second)?.elector.leader()).toBe(first);

        const api = env.kubeConfig.makeApiClient(CoordinationV1Api);
        const held = await api.readNamespacedLease({ name: 'leader', namespace });
        expect(held.spec?.holderIdentity).toBe(first);
        expect(held.spec?.leaseDurationSeconds).toBe(4);

        const leader = electors.get(first);
        if (!leader) throw new Error(`no elector named ${first}`);
        await cancelMoment(leader.lock);
        const releasedAt = Date.now();
        leader.stop.abort();
        await leader.done;
        expect(leader.elector.isLeader()).toBe(false);
        // The release itself went through (not refused, not abandoned after a retry period).
        expect(leader.logger.entries.map((e) => e.msg)).toContain('released leader lease');
        await waitUntil(`${second} takes over`, () => leading().join() === second, {
          timeoutMs: TIMING.leaseDurationMs * 2,
        });
        // Released, not expired: the follower's next jittered attempt (≤ 2.2 retry periods) wins.
        expect(Date.now() - releasedAt).toBeLessThan(TIMING.leaseDurationMs);
        const taken = await api.readNamespacedLease({ name: 'leader', namespace });
        expect(taken.spec?.holderIdentity).toBe(second);
        expect(taken.spec?.leaseTransitions).toBe(1);
        expect(leaders).toEqual([first, second]);
      } finally {
        for (const entry of electors.values()) entry.stop.abort();
        await Promise.all([...electors.values()].map((e) => e.done));
      }
    },
  );
});
