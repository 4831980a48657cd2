import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChangeEvent, WorkerMessage } from '../../src/kubernetes/reflector-worker/protocol.js';
import {
  MAX_EVENTS_PER_BATCH,
  runReflectorTask,
} from '../../src/kubernetes/reflector-worker/worker-thread-task.js';
import { FakePodApi } from '../support/fake-pod-api.js';
import { rawPod } from '../support/pods.js';

const ports: MessagePort[] = [];

afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

/** Every event batch the worker side posts, decoded, in order. */
function record() {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  const batches: ChangeEvent[][] = [];
  let replaced = false;
  const waiters: Array<() => void> = [];
  port1.on('message', (message: WorkerMessage) => {
    if (message.kind === 'replace-end') replaced = true;
    if (message.kind === 'batch' && message.events) {
      batches.push(JSON.parse(new TextDecoder().decode(message.events)) as ChangeEvent[]);
    }
    for (const wake of waiters.splice(0)) wake();
  });
  const until = async (test: () => boolean): Promise<void> => {
    while (!test()) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { main: port1, worker: port2, batches, until, replaced: () => replaced };
}

describe('runReflectorTask: watch events during a burst', () => {
  it('posts a burst decoded in one turn in batches of MAX_EVENTS_PER_BATCH, in order', async () => {
    const api = new FakePodApi();
    const { main, worker, batches, until, replaced } = record();
    const task = runReflectorTask(
      { port: worker, options: { cluster: {}, replaceChunkSize: 100, maxListBytes: 1 << 30 } },
      async () => api,
    );
    await until(replaced);
    const burst = 2 * MAX_EVENTS_PER_BATCH + 5;
    for (let index = 0; index < burst; index += 1) {
      api.watch.push({
        type: 'MODIFIED',
        object: rawPod({ name: `p${index}`, resourceVersion: String(10 + index) }),
      });
    }
    await until(() => batches.flat().length === burst);
    expect(batches.map((batch) => batch.length)).toEqual([
      MAX_EVENTS_PER_BATCH,
      MAX_EVENTS_PER_BATCH,
      5,
    ]);
    expect(batches.flat().map((event) => event.key)).toEqual(
      Array.from({ length: burst }, (_, index) => `default/p${index}`),
    );
    main.postMessage({ kind: 'close' });
    await task;
  });
});
