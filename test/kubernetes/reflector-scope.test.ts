/**
 * The reflector keeps to the namespace it watches: a LIST item or a watch event for a pod
 * elsewhere (only a broken server or a proxy sends one) is dropped, counted and logged, never
 * published.
 */
import { describe, expect, it } from 'vitest';
import {
  KubernetesReflector,
  type KubernetesReflectorOptions,
} from '../../src/kubernetes/reflector/reflector.js';
import { decodedEvents } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakePodApi, type PodWorld } from '../support/fake-pod-api.js';
import { pod, rawPod } from '../support/pods.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { reflectorAtRest } from '../support/reflector-at-rest.js';

/** `world`: what the first LIST answers (default: nothing). */
function setup(options: Partial<KubernetesReflectorOptions> = {}, world?: PodWorld) {
  const clock = new FakeClock();
  const api = new FakePodApi(clock);
  if (world) api.world = world;
  const logger = new RecordingLogger();
  const reflector = new KubernetesReflector({ api, clock, logger, random: () => 0, ...options });
  const stream = drain(decodedEvents(reflector.watch()));
  const atRest = () => reflectorAtRest({ api, reflector });
  return { clock, api, logger, reflector, stream, atRest };
}

const change = (type: string, name: string, namespace: string, resourceVersion: string) => ({
  type,
  object: rawPod({ name, namespace, resourceVersion }),
});

describe('KubernetesReflector: events outside the watched namespace', () => {
  it('drops them, counts them and logs the first at warn; the cursor does not move for them', async () => {
    const { api, logger, reflector, stream, atRest } = setup({ namespace: 'pools' });
    api.queueList({ pods: [], resourceVersion: '10' });
    await atRest();
    api.watch
      .push(change('ADDED', 'victim', 'kube-system', '11'))
      .push(change('MODIFIED', 'victim', 'kube-system', '12'))
      .push(change('ADDED', 'engine', 'pools', '13'))
      .push(change('ADDED', 'lookalike', 'pools-2', '14'))
      .push(change('DELETED', 'victim', 'kube-system', '15'));
    await atRest();
    expect(stream.items.slice(1)).toEqual([
      expect.objectContaining({ type: 'upsert', key: 'pools/engine' }),
    ]);
    expect(reflector.stats()).toMatchObject({
      cursor: '13',
      droppedEvents: { 'out-of-scope': 4 },
    });
    const warned = logger.mentioning('outside the watched namespace', 'warn');
    expect(warned).toHaveLength(1);
    expect(warned[0]?.obj).toEqual({ key: 'kube-system/victim', namespace: 'pools' });
    await stream.close();
  });

  it('leaves them out of a watch-list initial events too', async () => {
    const { api, reflector, stream, atRest } = setup({
      namespace: 'pools',
      initialList: 'watch-list',
    });
    await atRest();
    api.watch
      .push(change('ADDED', 'engine', 'pools', '11'))
      .push(change('ADDED', 'victim', 'kube-system', '12'))
      .push({
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          metadata: { resourceVersion: '20', annotations: { 'k8s.io/initial-events-end': 'true' } },
        },
      });
    await atRest();
    const replace = stream.items[0];
    expect(replace?.type === 'replace' ? [...replace.objects.keys()] : []).toEqual([
      'pools/engine',
    ]);
    expect(reflector.stats().droppedEvents).toEqual({ 'out-of-scope': 1 });
    await stream.close();
  });

  it('drops LIST items outside the namespace too, and counts and logs them as such', async () => {
    const { logger, reflector, stream, atRest } = setup(
      { namespace: 'pools' },
      {
        pods: [
          pod({ name: 'engine', namespace: 'pools', resourceVersion: '3' }),
          pod({ name: 'victim', namespace: 'kube-system', resourceVersion: '4' }),
          pod({ name: 'lookalike', namespace: 'pools-2', resourceVersion: '5' }),
        ],
        resourceVersion: '10',
      },
    );
    await atRest();
    const replace = stream.items[0];
    expect(replace?.type === 'replace' ? [...replace.objects.keys()] : []).toEqual([
      'pools/engine',
    ]);
    expect(reflector.stats()).toMatchObject({
      cursor: '10',
      droppedEvents: { 'out-of-scope': 2 },
    });
    const message = 'reflector dropped a LIST item for a pod outside the watched namespace';
    expect(logger.mentioning(message, 'warn').map((e) => e.obj)).toEqual([
      { key: 'kube-system/victim', namespace: 'pools' },
    ]);
    expect(logger.mentioning(message, 'debug')).toHaveLength(1);
    await stream.close();
  });

  it('drops nothing when watching every namespace', async () => {
    const { api, reflector, stream, atRest } = setup();
    api.queueList({ pods: [], resourceVersion: '10' });
    await atRest();
    api.watch.push(change('ADDED', 'a', 'kube-system', '11')).push(change('ADDED', 'b', 'x', '12'));
    await atRest();
    expect(stream.items).toHaveLength(3);
    expect(reflector.stats().droppedEvents).toEqual({});
    await stream.close();
  });
});
