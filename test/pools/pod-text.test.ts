import { describe, expect, it } from 'vitest';
import { cellIdOf, UnmappablePodError } from '../../src/pools/cell-key.js';
import { deriveCellState } from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { boundPodText, MAX_POD_TEXT_LENGTH } from '../../src/pools/pod-text.js';
import { lwsPod } from '../support/lws-pod.js';

const HUGE = 'x'.repeat(200_000);

describe('boundPodText', () => {
  it('keeps a text up to the bound whole, and cuts a longer one saying by how much', () => {
    expect(boundPodText('a'.repeat(MAX_POD_TEXT_LENGTH))).toBe('a'.repeat(MAX_POD_TEXT_LENGTH));
    expect(boundPodText(HUGE)).toBe(
      `${'x'.repeat(MAX_POD_TEXT_LENGTH)}… (${200_000 - MAX_POD_TEXT_LENGTH} more characters)`,
    );
  });
});

describe('pod texts entering a cell', () => {
  it('bounds a 200 KB size annotation in the why-not message', () => {
    const pod = lwsPod({ group: 0, worker: 0, size: HUGE });
    const state = deriveCellState('ns/engine-00000', [pod], {
      labels: LWS_LABELS,
      portName: 'http',
    })!;
    const reason = state.whyNotAlive.find((r) => r.reason === 'SizeInvalid')!;
    expect(reason.message.length).toBeLessThan(MAX_POD_TEXT_LENGTH + 150);
    expect(JSON.stringify(state).length).toBeLessThan(3_000);
  });

  it('bounds status and spec texts of a member (phase, IP, node)', () => {
    const pod = lwsPod({ group: 0, worker: 0, phase: HUGE, podIP: HUGE, node: HUGE });
    const state = deriveCellState('ns/engine-00000', [pod], {
      labels: LWS_LABELS,
      portName: 'http',
    })!;
    expect(JSON.stringify(state).length).toBeLessThan(3_000);
  });

  it('refuses a pool label longer than a label value may be, with a bounded message', () => {
    const pod = lwsPod({ pool: HUGE, group: 0, worker: 0, name: 'p-0' });
    let error: unknown;
    try {
      cellIdOf(pod, LWS_LABELS);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UnmappablePodError);
    expect((error as Error).message.length).toBeLessThan(1_000);
    expect((error as Error).message).toContain('more than a label value may be (63)');
  });

  it('bounds an unreadable cell index in its error', () => {
    const pod = lwsPod({ group: HUGE, worker: 0, name: 'p-0' });
    expect(() => cellIdOf(pod, LWS_LABELS)).toThrow(UnmappablePodError);
    try {
      cellIdOf(pod, LWS_LABELS);
    } catch (err) {
      expect((err as Error).message.length).toBeLessThan(1_000);
    }
  });
});
