import { describe, expect, it } from 'vitest';
import {
  cellGateCondition,
  MAX_GATE_MESSAGE_LENGTH,
  MAX_GATE_REASON_LENGTH,
} from '../../src/pools/cell-readiness-gate.js';
import { deriveCellState } from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { cellState } from '../support/cell-states.js';
import { lwsPod } from '../support/lws-pod.js';

describe('cellGateCondition', () => {
  it('is True with the address while the cell is alive and routable', () => {
    const cell = cellState(3);
    expect(cellGateCondition(cell)).toEqual({
      status: 'True',
      reason: 'CellAlive',
      message: `cell ${cell.id} is alive and routable at ${cell.address}`,
    });
  });

  it('is False with every why-not code and sentence otherwise', () => {
    const cell = cellState(3, { ready: false });
    expect(cellGateCondition(cell)).toEqual({
      status: 'False',
      reason: 'PodsNotReady',
      message: `cell ${cell.id}: ${cell.whyNotAlive.map((r) => r.message).join('; ')}`,
    });
  });

  it('is False for an alive cell that cannot be routed to', () => {
    const cell = cellState(3, { podIP: '127.0.0.1' });
    expect(cell.alive).toBe(true);
    expect(cellGateCondition(cell)).toMatchObject({ status: 'False', reason: 'AddressInvalid' });
  });

  it('bounds the reason to whole codes and the message to 1 KiB', () => {
    const pods = Array.from({ length: 200 }, (_, worker) =>
      lwsPod({
        worker: worker === 0 ? 0 : 'x',
        size: 300,
        ready: false,
        deleting: true,
        name: `p-${'n'.repeat(200)}-${worker}`,
      }),
    );
    const cell = deriveCellState('ns/engine-00000', pods, {
      labels: LWS_LABELS,
      portName: 'http',
    })!;
    const condition = cellGateCondition(cell);
    expect(condition.reason.length).toBeLessThanOrEqual(MAX_GATE_REASON_LENGTH);
    expect(condition.reason).toMatch(/^[A-Za-z]+(,[A-Za-z]+)*$/);
    expect(condition.reason.split(',')).toEqual(
      expect.arrayContaining(['PodsNotReady', 'PodsDeleting', 'WorkerIndexInvalid']),
    );
    expect(condition.message.length).toBe(MAX_GATE_MESSAGE_LENGTH);
    expect(condition.message.endsWith('…')).toBe(true);
  });
});
