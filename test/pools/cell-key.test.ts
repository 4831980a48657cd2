import { describe, expect, it } from 'vitest';
import {
  cellId,
  cellIdOf,
  cellKeyMap,
  parentKeyOf,
  splitParentKey,
  UnmappablePodError,
} from '../../src/pools/cell-key.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { lwsPod } from '../support/lws-pod.js';

describe('cell ids', () => {
  it('pads the cell index to five digits after the pool name', () => {
    expect(cellId('engine', 3)).toBe('engine-00003');
    expect(cellId('engine', 0)).toBe('engine-00000');
    expect(cellId('engine', 123456)).toBe('engine-123456');
  });

  it('names a pod with a pool label but no cell index after the pod itself', () => {
    const pod = lwsPod({ name: 'solo-trainer-7f9c', group: null });
    expect(cellIdOf(pod, LWS_LABELS)).toBe('solo-trainer-7f9c');
  });

  it('puts the leader and its workers into the same cell', () => {
    const map = cellKeyMap(LWS_LABELS);
    expect(map(lwsPod({ group: 3, worker: 0 }))).toBe('ns/engine-00003');
    expect(map(lwsPod({ group: 3, worker: 2 }))).toBe('ns/engine-00003');
  });

  it('treats a pod without the pool label as unmappable', () => {
    expect(cellKeyMap(LWS_LABELS)(lwsPod({ noPoolLabel: true }))).toBeUndefined();
  });

  it('keeps cells of the same id in different namespaces apart', () => {
    const map = cellKeyMap(LWS_LABELS);
    expect(map(lwsPod({ namespace: 'a', group: 1 }))).toBe('a/engine-00001');
    expect(map(lwsPod({ namespace: 'b', group: 1 }))).toBe('b/engine-00001');
  });

  it('throws a naming error for an unreadable cell index, so the store logs the pod', () => {
    const pod = lwsPod({ group: 'three' });
    expect(() => cellKeyMap(LWS_LABELS)(pod)).toThrow(UnmappablePodError);
    expect(() => cellKeyMap(LWS_LABELS)(pod)).toThrow(/group-index="three"/);
  });

  it('honours configured label keys', () => {
    const labels = { ...LWS_LABELS, pool: 'example.com/pool', cellIndex: 'example.com/cell' };
    const pod = lwsPod({ noPoolLabel: true, group: null });
    pod.metadata.labels['example.com/pool'] = 'train';
    pod.metadata.labels['example.com/cell'] = '12';
    expect(cellKeyMap(labels)(pod)).toBe('ns/train-00012');
  });

  it('splits a parent key back into namespace and id', () => {
    expect(splitParentKey(parentKeyOf('ns', 'engine-00001'))).toEqual({
      namespace: 'ns',
      id: 'engine-00001',
    });
    expect(splitParentKey(parentKeyOf('', 'engine-00001'))).toEqual({
      namespace: '',
      id: 'engine-00001',
    });
  });
});
