/**
 * The reflector never moves its view back in time: resourceVersions compared as KEP-5504 says, a
 * frame older than the cursor (or than the copy of its pod already read) is dropped, counted and
 * logged, and a run of them relists. Request sequences on the fake clock.
 */
import { describe, expect, it } from 'vitest';
import {
  KubernetesReflector,
  type KubernetesReflectorOptions,
  STALE_FRAMES_BEFORE_RELIST,
} from '../../src/kubernetes/reflector/reflector.js';
import type { Pod } from '../../src/model/pod.js';
import { decodedEvents } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodApi } from '../support/fake-pod-api.js';
import { pod, rawPod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { reflectorAtRest } from '../support/reflector-at-rest.js';

function setup(options: Partial<KubernetesReflectorOptions> = {}) {
  const clock = new FakeClock();
  const api = new FakePodApi(clock);
  const logger = new RecordingLogger();
  const reflector = new KubernetesReflector({ api, clock, logger, random: () => 0, ...options });
  const atRest = () => reflectorAtRest({ api, reflector });
  return { clock, api, logger, reflector, atRest };
}

/** A pod frame whose Ready condition says `ready`. */
function frame(type: string, name: string, resourceVersion: string, ready = true) {
  const object = rawPod({ name, resourceVersion }) as { status: { conditions: unknown[] } };
  object.status.conditions = [{ type: 'Ready', status: ready ? 'True' : 'False' }];
  return { type, object };
}

const bookmark = (resourceVersion: string) => ({
  type: 'BOOKMARK',
  object: { kind: 'Pod', metadata: { resourceVersion } },
});

function readyOf(pod: Pod | undefined): string | undefined {
  return pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

async function watchingFrom(resourceVersion: string) {
  const h = setup();
  h.api.queueList({ pods: [pod({ name: 'a', resourceVersion })], resourceVersion });
  const stream = drain(decodedEvents(h.reflector.watch()));
  await h.atRest();
  return { ...h, stream };
}

describe('KubernetesReflector: resourceVersions never go backwards', () => {
  it('drops every copy at RV − 1000 that follows a MODIFIED, so the consumer only sees the newer state', async () => {
    const { api, reflector, stream, atRest, logger } = await watchingFrom('40000');
    for (let step = 1; step <= 20; step += 1) {
      const version = 40_000 + step * 10;
      const ready = step % 2 === 0;
      api.watch
        .push(frame('MODIFIED', 'a', String(version), ready))
        .push(frame('MODIFIED', 'a', String(version - 1_000), !ready));
    }
    await atRest();
    const upserts = stream.items.slice(1);
    expect(upserts).toHaveLength(20);
    upserts.forEach((event, index) => {
      const step = index + 1;
      expect(event).toMatchObject({ type: 'upsert', key: 'default/a' });
      const object = event.type === 'upsert' ? event.object : undefined;
      expect(object?.metadata.resourceVersion).toBe(String(40_000 + step * 10));
      expect(readyOf(object)).toBe(step % 2 === 0 ? 'True' : 'False');
    });
    expect(reflector.stats()).toMatchObject({
      cursor: '40200',
      droppedEvents: { stale: 20 },
      relists: {},
    });
    // Logged: the first at warn with both versions, the rest at debug (the count is the metric).
    const warned = logger.mentioning('older than its cursor', 'warn');
    expect(warned).toHaveLength(1);
    expect(warned[0]?.obj).toEqual({ resourceVersion: '39010', cursor: '40010', key: 'default/a' });
    expect(api.log).toEqual(['LIST', 'WATCH rv=40000']);
    await stream.close();
  });

  it('compares by length first: 9 is older than 10, 100 is newer than 99', async () => {
    const { api, reflector, stream, atRest } = await watchingFrom('10');
    api.watch.push(frame('MODIFIED', 'a', '9')).push(frame('MODIFIED', 'a', '100'));
    await atRest();
    expect(
      stream.items.slice(1).map((e) => e.type === 'upsert' && e.object.metadata.resourceVersion),
    ).toEqual(['100']);
    api.watch.push(frame('MODIFIED', 'a', '99'));
    await atRest();
    expect(stream.items).toHaveLength(2);
    expect(reflector.stats()).toMatchObject({ cursor: '100', droppedEvents: { stale: 2 } });
    await stream.close();
  });

  it('never moves the cursor back on a bookmark, nor on a skipped unreadable frame', async () => {
    const { api, clock, reflector, stream, atRest } = await watchingFrom('500');
    await clock.advance(1_000);
    api.watch
      .push(bookmark('400'))
      .push({ type: 'MODIFIED', object: { metadata: { resourceVersion: '450' } } });
    await atRest();
    expect(reflector.stats()).toMatchObject({ cursor: '500', droppedEvents: { stale: 2 } });
    api.watch.end();
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=500', 'WATCH rv=500']);
    await stream.close();
  });

  it('applies a frame at the cursor and a DELETED after it, and drops a DELETED from before it', async () => {
    const { api, reflector, stream, atRest } = await watchingFrom('50');
    api.watch
      .push(frame('DELETED', 'a', '40'))
      .push(frame('MODIFIED', 'a', '50'))
      .push(frame('DELETED', 'a', '60'));
    await atRest();
    expect(stream.items.slice(1).map((e) => e.type)).toEqual(['upsert', 'delete']);
    expect(reflector.stats().droppedEvents).toEqual({ stale: 1 });
    await stream.close();
  });

  it('applies versions it cannot compare (not KEP-5504 decimals) in the order they came', async () => {
    const { api, reflector, stream, atRest } = await watchingFrom('opaque-b');
    api.watch.push(frame('MODIFIED', 'a', 'opaque-a')).push(frame('MODIFIED', 'a', '7'));
    await atRest();
    expect(stream.items).toHaveLength(3);
    expect(reflector.stats()).toMatchObject({ cursor: '7', droppedEvents: {} });
    await stream.close();
  });

  it(`relists after ${STALE_FRAMES_BEFORE_RELIST} stale frames in a row: the server went back in time`, async () => {
    const { api, clock, reflector, stream, atRest } = await watchingFrom('9000');
    api.queueList({ pods: [pod({ name: 'a', resourceVersion: '100' })], resourceVersion: '120' });
    for (let index = 1; index < STALE_FRAMES_BEFORE_RELIST; index += 1) {
      api.watch.push(bookmark(String(100 + index)));
    }
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=9000']);
    api.watch.push(frame('MODIFIED', 'a', '110'));
    await atRest();
    expect(api.watches[0]?.released).toBe(true);
    expect(reflector.stats()).toMatchObject({
      relists: { regression: 1 },
      droppedEvents: { stale: STALE_FRAMES_BEFORE_RELIST },
    });
    expect(reflector.stats().lastError).toBe(
      `${STALE_FRAMES_BEFORE_RELIST} watch frames in a row older than the cursor 9000 (the last at resourceVersion 110)`,
    );
    await clock.advance(800);
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=9000', 'LIST', 'WATCH rv=120']);
    expect(reflector.stats().cursor).toBe('120');
    await stream.close();
  });

  it('does not relist while current frames come between the stale ones', async () => {
    const { api, reflector, stream, atRest } = await watchingFrom('1000');
    for (let index = 1; index <= 3 * STALE_FRAMES_BEFORE_RELIST; index += 1) {
      api.watch.push(bookmark(String(1000 + index))).push(bookmark('1'));
    }
    await atRest();
    expect(api.log).toEqual(['LIST', 'WATCH rv=1000']);
    expect(reflector.stats().relists).toEqual({});
    await stream.close();
  });

  it('drops a watch-list initial event older than the copy of its pod it already read', async () => {
    const { api, reflector, atRest } = setup({ initialList: 'watch-list' });
    const stream = drain(decodedEvents(reflector.watch()));
    await atRest();
    api.watch
      .push(frame('ADDED', 'a', '30', true))
      .push(frame('ADDED', 'a', '20', false))
      .push({
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          metadata: { resourceVersion: '40', annotations: { 'k8s.io/initial-events-end': 'true' } },
        },
      });
    await atRest();
    const replace = stream.items[0];
    const held = replace?.type === 'replace' ? replace.objects.get('default/a') : undefined;
    expect(held?.metadata.resourceVersion).toBe('30');
    expect(readyOf(held)).toBe('True');
    expect(reflector.stats()).toMatchObject({ cursor: '40', droppedEvents: { stale: 1 } });
    await stream.close();
  });
});
