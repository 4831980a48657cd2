import { afterEach, describe, expect, it } from 'vitest';
import { ReconcileLoop, type SourceEvent } from '../../src/index.js';
import type { Pod } from '../../src/model/pod.js';
import { cellKeyMap } from '../../src/pools/cell-key.js';
import { createCellReconciler } from '../../src/pools/cell-reconciler.js';
import { CellRegistry } from '../../src/pools/cell-registry.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import {
  DEFAULT_STEP_INTERVAL_MS,
  SimulatedPodSource,
} from '../../src/simulated/simulated-source.js';
import { FakeClock } from '../support/fake-clock.js';
import { finishes, until } from '../support/until.js';

const STEP = DEFAULT_STEP_INTERVAL_MS;
const loops: ReconcileLoop<Pod>[] = [];

afterEach(async () => {
  for (const loop of loops.splice(0)) {
    await finishes(loop.stop(), { what: 'ReconcileLoop.stop() in teardown' });
  }
});

/** Waits until `loop` has nothing queued and nothing in flight. */
function idle(loop: ReconcileLoop<Pod>): Promise<void> {
  return until(
    () => {
      const state = loop.state();
      return state.queued.length === 0 && state.inFlight === undefined;
    },
    { what: 'the loop to reconcile everything queued' },
  );
}

/** The simulated source driving the real loop and the real cell reconcile. */
async function running(options: ConstructorParameters<typeof SimulatedPodSource>[0] = {}) {
  const clock = new FakeClock();
  const sim = new SimulatedPodSource({ clock, wallClock: () => 1_750_000_000_000, ...options });
  const registry = new CellRegistry();
  const loop: ReconcileLoop<Pod> = new ReconcileLoop<Pod>({
    source: sim.source,
    keyMap: cellKeyMap(LWS_LABELS),
    reconcile: createCellReconciler({
      labels: LWS_LABELS,
      portName: 'http',
      members: (key): Pod[] => loop.getByParent(key),
      registry,
    }),
    resyncPeriodMs: null,
    clock,
  });
  loops.push(loop);
  await loop.start();
  await idle(loop);
  const alive = () => Object.fromEntries(registry.list().map((c) => [c.id, c.alive] as const));
  const step = async (n = 1) => {
    for (let i = 0; i < n; i += 1) await clock.advance(STEP);
  };
  return { clock, sim, registry, loop, alive, step };
}

async function take(iterator: AsyncIterator<SourceEvent<Pod>>): Promise<SourceEvent<Pod>> {
  const result = await iterator.next();
  if (result.done) throw new Error('stream ended');
  return result.value;
}

describe('the simulated source', () => {
  it('opens every stream with a replace of the whole world', async () => {
    const sim = new SimulatedPodSource({ clock: new FakeClock() });
    const first = await take(sim.source(new AbortController().signal)[Symbol.asyncIterator]());
    expect(first.type).toBe('replace');
    expect(first.type === 'replace' && first.objects.size).toBe(12);
    const second = await take(sim.source(new AbortController().signal)[Symbol.asyncIterator]());
    expect(second.type).toBe('replace');
    await sim.close();
  });

  it('brings two pools of multi-pod cells from unscheduled to ready', async () => {
    const { registry, alive, step, sim } = await running();
    expect(alive()).toEqual({
      'engine-00000': false,
      'engine-00001': false,
      'trainer-00000': false,
      'trainer-00001': false,
    });
    expect(registry.get('default/engine-00000')?.members.every((m) => m.phase === 'Pending')).toBe(
      true,
    );
    await step(); // scheduled and started
    expect(registry.get('default/engine-00000')?.members.every((m) => m.podIP !== null)).toBe(true);
    await step(); // engine cell 0 ready
    expect(alive()['engine-00000']).toBe(true);
    await step(2); // engine cell 1, then the trainer cells
    expect(Object.values(alive())).toEqual([true, true, true, true]);
    expect(registry.get('default/trainer-00000')?.members).toHaveLength(4);
    expect(registry.get('default/engine-00000')?.address).toMatch(/^10\.244\.\d+\.\d+:30000$/);
    expect(sim.nextStep).toBe('container restart in engine cell 1');
  });

  it('plays a restart, a graceful termination, a scale-up and a scale-down, then repeats', async () => {
    const { registry, alive, step, sim } = await running();
    await step(4);
    const generation = (id: string) => registry.get(`default/${id}`)?.generation;
    const uidOf = (id: string) => registry.get(`default/${id}`)?.members[0]?.uid;

    const beforeRestart = generation('engine-00001');
    await step(); // container restart
    expect(alive()['engine-00001']).toBe(false);
    expect(registry.get('default/engine-00001')?.members[1]?.restarts).toBe(1);
    expect(generation('engine-00001')).not.toBe(beforeRestart);
    await step(); // recovered
    expect(alive()['engine-00001']).toBe(true);

    const leaderUid = uidOf('engine-00000');
    await step(); // graceful termination of the leader
    expect(registry.get('default/engine-00000')?.whyNotAlive.map((r) => r.reason)).toEqual([
      'PodsNotReady',
      'PodsDeleting',
    ]);
    await step(); // replaced: a new pod, same name, new uid
    expect(uidOf('engine-00000')).not.toBe(leaderUid);
    await step(2); // started, ready
    expect(alive()['engine-00000']).toBe(true);

    await step(); // scale-up
    expect(alive()['engine-00002']).toBe(false);
    await step(2);
    expect(alive()['engine-00002']).toBe(true);

    await step(); // scale-down of trainer cell 1 begins
    expect(alive()['trainer-00001']).toBe(false);
    await step(); // gone
    expect(alive()['trainer-00001']).toBeUndefined();
    await step(2); // engine cell 2 terminates and goes
    expect(alive()['engine-00002']).toBeUndefined();
    await step(3); // trainer cell 1 comes back
    expect(alive()).toEqual({
      'engine-00000': true,
      'engine-00001': true,
      'trainer-00000': true,
      'trainer-00001': true,
    });
    expect(sim.nextStep).toBe('container restart in engine cell 1');
  });

  it('reports its activity in the reflector stats shape', async () => {
    const { sim, step, loop } = await running();
    expect(sim.stats()).toMatchObject({
      phase: 'watching',
      healthy: true,
      lists: 1,
      watchOpens: 1,
    });
    await step(2);
    const stats = sim.stats();
    expect(stats.events.MODIFIED).toBe(12 + 2);
    expect(stats.lastSyncAtMs).toBe(1_750_000_000_000);
    await loop.stop();
    expect(sim.stats()).toMatchObject({ phase: 'idle', healthy: false });
    await sim.close();
    expect(sim.stats().phase).toBe('stopped');
  });

  it('delivers a fresh replace on relist() and counts it as a relist', async () => {
    const sim = new SimulatedPodSource({ clock: new FakeClock(), story: false });
    const stream = sim.source(new AbortController().signal)[Symbol.asyncIterator]();
    await take(stream);
    const next = take(stream);
    sim.relist();
    const event = await next;
    expect(event.type).toBe('replace');
    expect(sim.stats()).toMatchObject({ lists: 2, relists: { other: 1 } });
    await sim.close();
  });

  it('without a story, holds a static world of ready cells and sets no timer', async () => {
    const pools = [{ name: 'big', cells: 50, size: 4 }];
    const { alive, sim } = await running({ story: false, pools });
    expect(Object.values(alive())).toHaveLength(50);
    expect(Object.values(alive()).every(Boolean)).toBe(true);
    expect(sim.podCount).toBe(200);

    const clock = new FakeClock();
    const bare = new SimulatedPodSource({ clock, story: false, pools });
    const stream = bare.source(new AbortController().signal)[Symbol.asyncIterator]();
    await take(stream);
    let answered = false;
    const next = stream.next().finally(() => {
      answered = true;
    });
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(3_600_000); // an hour of fake time: no story, so no step ever comes
    expect(answered).toBe(false);
    await bare.close();
    expect(await next).toEqual({ done: true, value: undefined });
  });

  it('advances the story only through the newest stream', async () => {
    const clock = new FakeClock();
    const sim = new SimulatedPodSource({ clock });
    const old = sim.source(new AbortController().signal)[Symbol.asyncIterator]();
    await take(old);
    const fresh = sim.source(new AbortController().signal)[Symbol.asyncIterator]();
    expect(await old.next()).toEqual({ done: true, value: undefined });
    await take(fresh);
    const next = take(fresh);
    await clock.advance(STEP);
    expect((await next).type).toBe('upsert');
    expect(sim.nextStep).toBe('engine cell 0 ready');
    await sim.close();
    expect(await fresh.next()).toEqual({ done: true, value: undefined });
    expect(clock.pendingTimers).toBe(0);
  });

  it('closes a stream at once, cancelling its timer', async () => {
    const clock = new FakeClock();
    const sim = new SimulatedPodSource({ clock });
    const stream = sim.source(new AbortController().signal)[Symbol.asyncIterator]();
    await take(stream);
    const pending = stream.next();
    await until(() => clock.pendingTimers === 1, { what: 'the next step to be scheduled' });
    await stream.return?.();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(clock.pendingTimers).toBe(0);
  });

  it('ends a stream at once, cancelling its timer, when the stream’s signal aborts', async () => {
    const clock = new FakeClock();
    const sim = new SimulatedPodSource({ clock });
    const opened = new AbortController();
    const stream = sim.source(opened.signal)[Symbol.asyncIterator]();
    await take(stream);
    const pending = stream.next();
    await until(() => clock.pendingTimers === 1, { what: 'the next step to be scheduled' });
    opened.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(clock.pendingTimers).toBe(0);
    expect(sim.stats().phase).toBe('idle');
    await sim.close();
  });

  it('refuses a story it cannot play', () => {
    expect(() => new SimulatedPodSource({ pools: [{ name: 'x', cells: 1, size: 1 }] })).toThrow(
      RangeError,
    );
  });
});

describe('growing a static world', () => {
  it('adds ready cells that reach the store with the next relist, not before', async () => {
    const pools = [{ name: 'big', cells: 2, size: 2 }];
    const { alive, sim, loop, clock } = await running({ story: false, pools });
    sim.addReadyCells({ name: 'big', cells: 5, size: 2 });
    await clock.advance(3_600_000); // no story: nothing but a relist may bring them
    await idle(loop);
    expect(Object.keys(alive())).toHaveLength(2);
    sim.relist();
    await until(() => Object.keys(alive()).length === 5, { what: 'the relist to reach the store' });
    expect(Object.values(alive())).toEqual([true, true, true, true, true]);
    expect(sim.podCount).toBe(10);
  });
});
