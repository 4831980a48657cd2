import { describe, expect, it } from 'vitest';
import {
  EVENT_HISTORY_BYTES,
  EventHistory,
  formatEventId,
  sequenceOf,
} from '../../src/service/event-history.js';
import { SSE_MAX_CLIENT_BYTES } from '../../src/service/event-stream.js';

const EPOCH = 'feedbeef';

/** A history holding events 1..count of `type`, each `bytes` long. */
function filled(count: number, options: { maxEvents?: number; maxBytes?: number } = {}) {
  const history = new EventHistory({ epoch: EPOCH, ...options });
  for (let i = 0; i < count; i += 1) {
    history.record(i % 2 === 0 ? 'even' : 'odd', Buffer.from(`event ${history.nextSeq}`));
  }
  return history;
}

const seqs = (entries: readonly { seq: number }[]) => entries.map((e) => e.seq);

describe('sequenceOf', () => {
  it('reads the sequence of an id of its epoch only', () => {
    expect(sequenceOf(formatEventId(EPOCH, 42), EPOCH)).toBe(42);
    expect(sequenceOf(`${EPOCH}-0`, EPOCH)).toBe(0);
    for (const other of ['0badcafe-42', `${EPOCH}-`, `${EPOCH}-042`, `${EPOCH}-4x`, '42']) {
      expect(sequenceOf(other, EPOCH), other).toBeUndefined();
    }
  });

  it('refuses more than 15 digits, so every sequence it returns is exact', () => {
    expect(sequenceOf(`${EPOCH}-${'9'.repeat(15)}`, EPOCH)).toBe(999_999_999_999_999);
    expect(sequenceOf(`${EPOCH}-${'9'.repeat(16)}`, EPOCH)).toBeUndefined();
  });
});

describe('EventHistory', () => {
  it('numbers events from 1 and resumes after any held id with exactly the later ones', () => {
    const history = filled(5);
    expect(history.latest).toBe(5);
    expect(history.resume(`${EPOCH}-2`)).toEqual({
      kind: 'complete',
      entries: expect.any(Array),
    });
    const point = history.resume(`${EPOCH}-2`);
    expect(point.kind === 'complete' && seqs(point.entries)).toEqual([3, 4, 5]);
    const none = history.resume(`${EPOCH}-5`);
    expect(none.kind === 'complete' && none.entries).toEqual([]);
  });

  it('keeps at most maxEvents, and reports a gap for an id before the oldest held', () => {
    const history = filled(10, { maxEvents: 4 });
    expect(history.size).toBe(4);
    // Held: 7..10. After 5, event 6 is lost.
    expect(history.resume(`${EPOCH}-5`)).toMatchObject({ kind: 'gap', missed: 1, lostThrough: 6 });
    const gap = history.resume(`${EPOCH}-0`);
    expect(gap.kind === 'gap' && [gap.missed, seqs(gap.entries)]).toEqual([6, [7, 8, 9, 10]]);
    // The id just before the oldest held is complete.
    expect(history.resume(`${EPOCH}-6`).kind).toBe('complete');
  });

  it('keeps at most maxBytes, but always the newest event', () => {
    const history = filled(10, { maxBytes: 20 });
    expect(history.bytes).toBeLessThanOrEqual(20);
    expect(history.size).toBe(2);
    const lone = new EventHistory({ epoch: EPOCH, maxBytes: 4 });
    lone.record('big', Buffer.alloc(100));
    expect(lone.size).toBe(1);
  });

  it('does not know ids of another epoch or ids it never gave', () => {
    const history = filled(3);
    expect(history.resume('0badcafe-1')).toEqual({ kind: 'unknown' });
    expect(history.resume(`${EPOCH}-4`)).toEqual({ kind: 'unknown' });
  });

  it('names the id before the last n events of some types, or before all it holds', () => {
    const history = filled(10);
    // odd-type events are 2, 4, 6, 8, 10.
    expect(history.replayCursor(new Set(['odd']), 2)).toBe(`${EPOCH}-7`);
    expect(history.replayCursor(new Set(['odd']), 50)).toBe(`${EPOCH}-1`);
    expect(history.replayCursor(new Set(['none']), 5)).toBe(`${EPOCH}-10`);
  });

  it('holds at most half of what one stream may queue, so a whole replay fits a stream', () => {
    expect(EVENT_HISTORY_BYTES * 2).toBe(SSE_MAX_CLIENT_BYTES);
  });
});
