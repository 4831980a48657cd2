/**
 * What the main thread makes of the reflector's `EncodedPod`s, for tests that assert on pods:
 * each pod's JSON parsed back into the model's `Pod`, as ../../src/kubernetes/reflector-worker's
 * main side parses the hop's bytes.
 */
import type { EncodedPod } from '../../src/kubernetes/codec/encoded-pod.js';
import type { Pod } from '../../src/model/pod.js';
import type { SourceEvent } from '../../src/runtime/source-event.js';

const text = new TextDecoder();

/** The `Pod` an `EncodedPod`'s JSON parses to. */
export function decodedPod(pod: EncodedPod): Pod {
  return JSON.parse(text.decode(pod.json)) as Pod;
}

/** One event with its pods parsed back. */
export function decodedEvent(event: SourceEvent<EncodedPod>): SourceEvent<Pod> {
  switch (event.type) {
    case 'replace':
      return {
        type: 'replace',
        objects: new Map([...event.objects].map(([k, v]) => [k, decodedPod(v)])),
      };
    case 'upsert':
      return { type: 'upsert', key: event.key, object: decodedPod(event.object) };
    case 'delete':
      return event.lastObject
        ? { type: 'delete', key: event.key, lastObject: decodedPod(event.lastObject) }
        : { type: 'delete', key: event.key };
  }
}

/** A reflector's stream with every pod parsed back; closing it closes the reflector's. */
export function decodedEvents(
  events: AsyncIterable<SourceEvent<EncodedPod>>,
): AsyncIterable<SourceEvent<Pod>> {
  return {
    [Symbol.asyncIterator]() {
      const inner = events[Symbol.asyncIterator]();
      return {
        async next() {
          const result = await inner.next();
          return result.done ? result : { done: false, value: decodedEvent(result.value) };
        },
        async return() {
          await inner.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}
