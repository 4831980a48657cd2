import { describe, expect, it } from 'vitest';
import type { Pod } from '../../src/model/pod.js';
import { createCellReconciler } from '../../src/pools/cell-reconciler.js';
import { CellRegistry, type CellTransition } from '../../src/pools/cell-registry.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { lwsPod } from '../support/lws-pod.js';
import { RecordingLogger } from '../support/recording-logger.js';

function setup() {
  const members = new Map<string, Pod[]>();
  const registry = new CellRegistry();
  const logger = new RecordingLogger();
  const seen: CellTransition['type'][] = [];
  const reconcile = createCellReconciler({
    labels: LWS_LABELS,
    portName: 'http',
    members: (key) => members.get(key) ?? [],
    registry,
    logger,
    onTransition: (t) => seen.push(t.type),
  });
  const run = (key: string) => reconcile(key, new AbortController().signal);
  return { members, registry, logger, seen, run };
}

const KEY = 'ns/engine-00000';
const pods = (ready: boolean, restarts = 0): Pod[] => [
  lwsPod({ group: 0, worker: 0, size: 2 }),
  lwsPod({ group: 0, worker: 1, size: 2, ready, restarts: [restarts] }),
];

describe('the cell reconcile', () => {
  it('publishes the cell and logs one line per transition', async () => {
    const { members, registry, logger, seen, run } = setup();
    members.set(KEY, pods(false));
    await run(KEY);
    expect(registry.get(KEY)?.alive).toBe(false);
    members.set(KEY, pods(true));
    await run(KEY);
    members.set(KEY, pods(false, 1));
    await run(KEY);
    members.delete(KEY);
    await run(KEY);
    expect(seen).toEqual(['appeared', 'alive', 'generation-changed', 'not-alive', 'gone']);
    expect(logger.entries.map((e) => [e.level, e.msg])).toEqual([
      ['info', 'cell appeared, not alive: engine-0-1 is not ready'],
      ['info', 'cell alive'],
      ['info', 'cell generation changed'],
      ['warn', 'cell not alive: engine-0-1 is not ready'],
      ['info', 'cell gone'],
    ]);
    expect(logger.entries[0]?.obj).toMatchObject({
      cell: 'engine-00000',
      pool: 'engine',
      namespace: 'ns',
    });
    // One shape for `reasons` on every line: the codes, never the messages.
    const reasons = logger.entries.flatMap((e) => (e.obj as { reasons?: string[] }).reasons ?? []);
    expect(reasons.length).toBeGreaterThan(0);
    for (const reason of reasons) expect(reason).toMatch(/^[A-Z][A-Za-z]+$/);
    expect(registry.size).toBe(0);
  });

  it('is idempotent: a second run on the same members logs nothing', async () => {
    const { members, logger, run } = setup();
    members.set(KEY, pods(true));
    await run(KEY);
    await run(KEY);
    expect(logger.entries).toHaveLength(1);
  });

  it('publishes nothing when its signal is already aborted', async () => {
    const { members, registry } = setup();
    members.set(KEY, pods(true));
    const reconcile = createCellReconciler({
      labels: LWS_LABELS,
      portName: 'http',
      members: (key) => members.get(key) ?? [],
      registry,
    });
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    await expect(reconcile(KEY, controller.signal)).rejects.toThrow('shutting down');
    expect(registry.size).toBe(0);
  });
});
