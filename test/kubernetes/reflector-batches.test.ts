/**
 * The reflector hands on the changes of the frames one read brought together (`watchBatches()`),
 * in order, and never lets a frame that ends the watch swallow the changes before it. Request
 * sequences on the fake clock.
 */
import { describe, expect, it } from 'vitest';
import { type EventBatch, KubernetesReflector } from '../../src/kubernetes/reflector/reflector.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodApi } from '../support/fake-pod-api.js';
import { pod, rawPod } from '../support/pods.js';
import { reflectorAtRest } from '../support/reflector-at-rest.js';

function setup(readyFrames = true) {
  const clock = new FakeClock();
  const api = new FakePodApi(clock);
  api.readyFrames = readyFrames;
  api.queueList({ pods: [pod({ name: 'a', resourceVersion: '10' })], resourceVersion: '10' });
  const reflector = new KubernetesReflector({ api, clock, random: () => 0 });
  const atRest = () => reflectorAtRest({ api, reflector });
  return { clock, api, reflector, atRest };
}

const modified = (name: string, resourceVersion: string) => ({
  type: 'MODIFIED',
  object: rawPod({ name, resourceVersion }),
});

/** Each batch as the keys and versions of its events (`replace` for a whole world). */
function shapes(batches: EventBatch[]): string[][] {
  return batches.map((batch) =>
    batch.map((event) =>
      event.type === 'replace'
        ? `replace(${event.objects.size})`
        : `${event.type} ${event.key}@${event.type === 'upsert' ? event.object.metadata.resourceVersion : ''}`,
    ),
  );
}

describe('KubernetesReflector.watchBatches', () => {
  it('hands on the changes of the frames waiting together as one batch, in their order', async () => {
    const { api, reflector, atRest } = setup();
    const stream = drain(reflector.watchBatches());
    await atRest();
    api.watch
      .push(modified('a', '11'))
      .push({ type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: '12' } } })
      .push(modified('b', '13'))
      .push(modified('a', '14'));
    await atRest();
    expect(shapes(stream.items)).toEqual([
      ['replace(1)'],
      ['upsert default/a@11', 'upsert default/b@13', 'upsert default/a@14'],
    ]);
    expect(reflector.stats()).toMatchObject({ cursor: '14' });
    await stream.close();
  });

  it('hands on the changes before a frame that ends the watch, then relists', async () => {
    const { api, reflector, atRest } = setup();
    const stream = drain(reflector.watchBatches());
    await atRest();
    api.world = { pods: [pod({ name: 'a', resourceVersion: '30' })], resourceVersion: '30' };
    api.watch
      .push(modified('a', '11'))
      .push(modified('b', '12'))
      .push({
        type: 'ERROR',
        object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' },
      })
      .push(modified('b', '13'));
    await atRest();
    expect(shapes(stream.items)).toEqual([
      ['replace(1)'],
      ['upsert default/a@11', 'upsert default/b@12'],
      ['replace(1)'],
    ]);
    // The frame after the ERROR was never read: the expired cursor relisted at once.
    expect(api.log).toEqual(['LIST', 'WATCH rv=10', 'LIST', 'WATCH rv=30']);
    await stream.close();
  });

  it('hands on one frame at a time from a stream that cannot give frames without waiting', async () => {
    const { api, reflector, atRest } = setup(false);
    const stream = drain(reflector.watchBatches());
    await atRest();
    api.watch.push(modified('a', '11')).push(modified('b', '12'));
    await atRest();
    expect(shapes(stream.items)).toEqual([
      ['replace(1)'],
      ['upsert default/a@11'],
      ['upsert default/b@12'],
    ]);
    await stream.close();
  });

  it('gives watch() the same events one by one', async () => {
    const { api, reflector, atRest } = setup();
    const stream = drain(reflector.watch());
    await atRest();
    api.watch.push(modified('a', '11')).push(modified('b', '12'));
    await atRest();
    expect(stream.items.map((event) => event.type)).toEqual(['replace', 'upsert', 'upsert']);
    await stream.close();
    expect(api.watch.released).toBe(true);
  });
});
