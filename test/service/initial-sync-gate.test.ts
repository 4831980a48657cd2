import { describe, expect, it } from 'vitest';
import { InitialSyncGate } from '../../src/service/initial-sync-gate.js';

/** A gate whose calls count how often one of them said it opened it. */
function gate() {
  let opened = 0;
  const inner = new InitialSyncGate();
  const g = {
    get synced() {
      return inner.synced;
    },
    listed(keys: string[]) {
      if (inner.listed(keys)) opened += 1;
    },
    reconciled(key: string) {
      if (inner.reconciled(key)) opened += 1;
    },
  };
  return { g, opened: () => opened };
}

describe('InitialSyncGate', () => {
  it('opens once every cell of the initial list has been reconciled', () => {
    const { g, opened } = gate();
    g.listed(['ns/a', 'ns/b']);
    g.reconciled('ns/a');
    expect(g.synced).toBe(false);
    g.reconciled('ns/b');
    expect([g.synced, opened()]).toEqual([true, 1]);
  });

  it('counts cells reconciled before the list was known', () => {
    const { g, opened } = gate();
    g.reconciled('ns/a');
    g.listed(['ns/a', 'ns/b']);
    expect(g.synced).toBe(false);
    g.reconciled('ns/b');
    expect(opened()).toBe(1);
  });

  it('opens at once for an empty list, or one reconciled already', () => {
    const empty = gate();
    empty.g.listed([]);
    expect(empty.opened()).toBe(1);
    const early = gate();
    early.g.reconciled('ns/a');
    early.g.listed(['ns/a']);
    expect(early.opened()).toBe(1);
  });

  it('never opens twice, whatever follows', () => {
    const { g, opened } = gate();
    g.listed(['ns/a']);
    g.reconciled('ns/a');
    g.reconciled('ns/a');
    g.listed(['ns/b']);
    expect(opened()).toBe(1);
  });

  it('ignores a cell outside the initial list', () => {
    const { g } = gate();
    g.listed(['ns/a']);
    g.reconciled('ns/z');
    expect(g.synced).toBe(false);
  });
});
