import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/model/pod.js';
import { cellGeneration, deriveCellState } from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { type LwsPodOptions, lwsPod } from '../support/lws-pod.js';

// Issue 35, item 1: when the LWS leader StatefulSet replaces a leader, the previous
// incarnation's workers (owned, through their worker StatefulSet, by the old leader pod) stay
// until the garbage collector removes them. A cell must never be alive with one of them.

const options = { labels: LWS_LABELS, portName: 'http' };
const KEY = 'ns/engine-00001';

/** A leader of group 1 as the leader StatefulSet `engine` makes it. */
function leader(overrides: LwsPodOptions = {}): Pod {
  return lwsPod({
    group: 1,
    worker: 0,
    size: 2,
    uid: 'leader-new',
    owner: { name: 'engine', uid: 'leader-sts' },
    ...overrides,
  });
}

/** A worker of group 1 as its worker StatefulSet `engine-1` makes it. */
function worker(overrides: LwsPodOptions = {}): Pod {
  return lwsPod({
    group: 1,
    worker: 1,
    size: 2,
    podIP: '10.0.0.2',
    owner: { uid: 'worker-sts-new' },
    ...overrides,
  });
}

function derive(pods: Pod[]) {
  const state = deriveCellState(KEY, pods, options);
  if (!state) throw new Error('expected a state');
  return state;
}

describe('cell membership per LeaderWorkerSet incarnation', () => {
  it('is not alive with the worker of a previous leader beside a new one: the sequence seen on a real cluster', () => {
    // Leader engine-1 replaced at 08:26:16 (revision 8658bd649f); the old incarnation's worker
    // engine-1-1, created 08:26:13 with revision 54d9cfb9b8, is still Ready and not terminating.
    const state = derive([
      leader({ created: '2026-12-01T08:26:16Z', revision: '8658bd649f' }),
      worker({
        created: '2026-12-01T08:26:13Z',
        revision: '54d9cfb9b8',
        owner: { uid: 'worker-sts-old' },
      }),
    ]);
    expect(state.members.every((m) => m.ready && !m.deleting)).toBe(true);
    expect(state.alive).toBe(false);
    expect(state.whyNotAlive).toEqual([
      {
        reason: 'StaleMember',
        message:
          "engine-1-1 belongs to a previous leader: its template revision 54d9cfb9b8 is not the leader's 8658bd649f",
        pods: ['engine-1-1'],
      },
    ]);
  });

  it('is alive once the new incarnation is whole: worker after its leader, same revision', () => {
    const state = derive([
      leader({ created: '2026-12-01T08:26:16Z', revision: '8658bd649f' }),
      worker({ created: '2026-12-01T08:26:17Z', revision: '8658bd649f' }),
    ]);
    expect(state.alive).toBe(true);
    expect(state.whyNotAlive).toEqual([]);
  });

  it('calls a worker stale when its template revision is not its leader’s (a rolling update)', () => {
    const state = derive([
      leader({ revision: 'new' }),
      worker({ revision: 'old', created: '2026-12-01T08:26:17Z' }),
    ]);
    expect(state.whyNotAlive.map((r) => r.reason)).toEqual(['StaleMember']);
  });

  it('calls an LWS worker stale when it was created in an earlier second than its leader (a leader deleted, same revision)', () => {
    const state = derive([
      leader({ revision: 'r1', created: '2026-12-01T08:26:16Z' }),
      worker({ revision: 'r1', created: '2026-12-01T08:26:15Z' }),
    ]);
    expect(state.whyNotAlive).toEqual([
      {
        reason: 'StaleMember',
        message:
          'engine-1-1 belongs to a previous leader: it was created at 2026-12-01T08:26:15Z, before the leader (2026-12-01T08:26:16Z)',
        pods: ['engine-1-1'],
      },
    ]);
  });

  it('cannot tell a stale worker created in the same second as its new leader from the pods alone (the documented miss)', () => {
    const state = derive([
      leader({ revision: 'r1', created: '2026-12-01T08:26:16Z' }),
      worker({ revision: 'r1', created: '2026-12-01T08:26:16Z', owner: { uid: 'worker-sts-old' } }),
    ]);
    expect(state.alive).toBe(true);
  });

  it('calls the workers of an older worker StatefulSet stale when workers disagree on theirs', () => {
    const pods = [
      leader({ size: 3, revision: 'r1', created: '2026-12-01T08:26:16Z' }),
      worker({
        size: 3,
        revision: 'r1',
        created: '2026-12-01T08:26:16Z',
        owner: { uid: 'worker-sts-old' },
      }),
      worker({
        size: 3,
        worker: 2,
        revision: 'r1',
        created: '2026-12-01T08:26:17Z',
        owner: { uid: 'worker-sts-new' },
      }),
    ];
    expect(derive(pods).whyNotAlive).toEqual([
      {
        reason: 'StaleMember',
        message:
          'engine-1-1 belongs to a previous leader: it is controlled by an older worker StatefulSet than its newest fellow worker',
        pods: ['engine-1-1'],
      },
    ]);
  });

  it('calls every disagreeing worker stale when which worker StatefulSet is newer cannot be told', () => {
    const pods = [
      leader({ size: 3, revision: 'r1', created: '2026-12-01T08:26:16Z' }),
      worker({ size: 3, revision: 'r1', created: '2026-12-01T08:26:17Z', owner: { uid: 'a' } }),
      worker({
        size: 3,
        worker: 2,
        revision: 'r1',
        created: '2026-12-01T08:26:17Z',
        owner: { uid: 'b' },
      }),
    ];
    const [reason] = derive(pods).whyNotAlive;
    expect(reason).toMatchObject({
      reason: 'StaleMember',
      pods: ['engine-1-1', 'engine-1-2'],
      message:
        'engine-1-1 and engine-1-2 belong to a previous leader (engine-1-1: the workers are controlled by different worker StatefulSets)',
    });
  });

  it('gives a cell with a stale member a generation of its own', () => {
    const pods = [
      leader({ revision: 'new', created: '2026-12-01T08:26:16Z' }),
      worker({ revision: 'old', created: '2026-12-01T08:26:13Z' }),
    ];
    const state = derive(pods);
    expect(state.generation).not.toBe(cellGeneration(state.members));
    expect(state.generation).toBe(cellGeneration(state.members, new Set(['engine-1-1'])));
  });

  it('keeps the old rule for plain labelled pods: no LWS revision label on the leader, no incarnations', () => {
    const state = derive([
      leader({ created: '2026-12-01T08:26:16Z' }),
      worker({ created: '2026-12-01T08:26:13Z', revision: 'whatever', owner: { uid: 'x' } }),
    ]);
    expect(state.alive).toBe(true);
  });

  it('judges creation time only for a worker controlled by the StatefulSet named after its leader', () => {
    const state = derive([
      leader({ revision: 'r1', created: '2026-12-01T08:26:16Z' }),
      worker({
        revision: 'r1',
        created: '2026-12-01T08:26:13Z',
        owner: { name: 'trainers', uid: 'other-sts' },
      }),
    ]);
    expect(state.alive).toBe(true);
  });

  it('lists stale members bounded like every other reason', () => {
    const pods = [
      leader({ size: 40, revision: 'new' }),
      ...Array.from({ length: 39 }, (_, i) =>
        worker({ size: 40, worker: i + 1, revision: 'old', name: `engine-1-${i + 1}` }),
      ),
    ];
    const [reason] = derive(pods).whyNotAlive;
    expect(reason?.reason).toBe('StaleMember');
    expect(reason?.pods).toHaveLength(16);
    expect(reason?.omitted).toBe(23);
    expect(reason?.message).toMatch(/ and 23 more belong to a previous leader \(engine-1-1: /);
  });
});
