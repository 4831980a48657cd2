import { describe, expect, it } from 'vitest';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { decodedEvent, decodedPod } from '../support/decoded-pods.js';
import { pod, rawPod } from '../support/pods.js';

const json = (value: unknown) => ({ kind: 'decoded', value }) as const;

/** A reading with its pod parsed back, as the main thread reads it. */
function readable(reading: ReturnType<typeof readFrame>): unknown {
  return reading.kind === 'change' ? { ...reading, event: decodedEvent(reading.event) } : reading;
}

function withoutVersion(raw: Record<string, unknown>): Record<string, unknown> {
  const metadata = { ...(raw.metadata as Record<string, unknown>) };
  delete metadata.resourceVersion;
  return { ...raw, metadata };
}

describe('readFrame', () => {
  it.each([
    [
      'ADDED → an upsert, cursor to its version',
      { type: 'ADDED', object: rawPod({ name: 'a', resourceVersion: '5' }) },
      {
        kind: 'change',
        type: 'ADDED',
        event: {
          type: 'upsert',
          key: 'default/a',
          object: pod({ name: 'a', resourceVersion: '5' }),
        },
        resourceVersion: '5',
      },
    ],
    [
      'MODIFIED → an upsert',
      { type: 'MODIFIED', object: rawPod({ name: 'a', resourceVersion: '6' }) },
      {
        kind: 'change',
        type: 'MODIFIED',
        event: {
          type: 'upsert',
          key: 'default/a',
          object: pod({ name: 'a', resourceVersion: '6' }),
        },
        resourceVersion: '6',
      },
    ],
    [
      'DELETED → a delete with the pod as tombstone',
      { type: 'DELETED', object: rawPod({ name: 'a', resourceVersion: '7' }) },
      {
        kind: 'change',
        type: 'DELETED',
        event: {
          type: 'delete',
          key: 'default/a',
          lastObject: pod({ name: 'a', resourceVersion: '7' }),
        },
        resourceVersion: '7',
      },
    ],
    [
      'a valid pod without a version → a change that leaves the cursor alone',
      { type: 'ADDED', object: withoutVersion(rawPod({ name: 'a' })) },
      { kind: 'change', type: 'ADDED', event: expect.objectContaining({ type: 'upsert' }) },
    ],
    [
      'BOOKMARK → the cursor only',
      { type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: '99' } } },
      { kind: 'bookmark', type: 'BOOKMARK', resourceVersion: '99' },
    ],
    [
      'BOOKMARK closing a watch-list’s initial events → its version, marked',
      {
        type: 'BOOKMARK',
        object: {
          kind: 'Pod',
          metadata: {
            resourceVersion: '120',
            annotations: { 'k8s.io/initial-events-end': 'true' },
          },
        },
      },
      { kind: 'bookmark', type: 'BOOKMARK', resourceVersion: '120', initialEventsEnd: true },
    ],
    [
      'BOOKMARK with the annotation not "true" → an ordinary bookmark',
      {
        type: 'BOOKMARK',
        object: {
          metadata: { resourceVersion: '121', annotations: { 'k8s.io/initial-events-end': 'yes' } },
        },
      },
      { kind: 'bookmark', type: 'BOOKMARK', resourceVersion: '121' },
    ],
    [
      'BOOKMARK without a version → nothing',
      { type: 'BOOKMARK', object: { metadata: { resourceVersion: '' } } },
      { kind: 'bookmark', type: 'BOOKMARK' },
    ],
    [
      'an unknown type → ignored, cursor still moves',
      { type: 'RESYNC', object: { metadata: { resourceVersion: '3' } } },
      { kind: 'ignored', type: 'RESYNC', resourceVersion: '3' },
    ],
    [
      'ERROR → the Status, for classification',
      {
        type: 'ERROR',
        object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' },
      },
      {
        kind: 'failure',
        type: 'ERROR',
        failure: {
          kind: 'status',
          inStream: true,
          status: { code: 410, reason: 'Expired', message: 'too old', causes: [] },
        },
      },
    ],
    [
      'an unreadable pod with a version → malformed, version kept',
      { type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '8' } } },
      {
        kind: 'failure',
        type: 'ADDED',
        failure: {
          kind: 'malformed-pod',
          resourceVersion: '8',
          message: expect.stringContaining('metadata.uid'),
        },
      },
    ],
    [
      'an unreadable pod without a version → malformed, no version',
      { type: 'MODIFIED', object: 'not a pod' },
      {
        kind: 'failure',
        type: 'MODIFIED',
        failure: { kind: 'malformed-pod', message: expect.any(String) },
      },
    ],
    [
      'a frame without a type → malformed, its version kept',
      { object: { metadata: { resourceVersion: '4' } } },
      {
        kind: 'failure',
        type: 'OTHER',
        failure: {
          kind: 'malformed-pod',
          resourceVersion: '4',
          message: 'watch frame has no type',
        },
      },
    ],
    [
      'a frame that is not an object → malformed frame',
      ['ADDED'],
      {
        kind: 'failure',
        type: 'OTHER',
        failure: { kind: 'malformed-frame', message: expect.stringContaining('not an object') },
      },
    ],
  ])('%s', (_, value, reading) => {
    expect(readable(readFrame(json(value)))).toEqual(reading);
  });

  it('reads a line that was not JSON as a malformed frame', () => {
    expect(readFrame({ kind: 'garbled', error: 'Unexpected token' })).toEqual({
      kind: 'failure',
      type: 'OTHER',
      failure: { kind: 'malformed-frame', message: 'watch frame is not JSON: Unexpected token' },
    });
  });

  it('drops the fields the partial view does not read', () => {
    const reading = readFrame(json({ type: 'ADDED', object: rawPod({ name: 'a' }) }));
    expect(
      reading.kind === 'change' &&
        reading.event.type === 'upsert' &&
        decodedPod(reading.event.object).metadata,
    ).not.toHaveProperty('managedFields');
  });
});
