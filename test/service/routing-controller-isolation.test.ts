/**
 * Sink isolation (issue 36, finding 2): a slow or dead sink target never delays another target's
 * changes. Each sink applies on its own worker; a deploy waits for them at most SINK_RUN_WAIT_MS,
 * so a run stays bounded and the next change reaches the healthy sinks at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RoutableCell } from '../../src/pools/routing-state.js';
import {
  RoutingController,
  SINK_RUN_WAIT_MS,
  SINK_SETTLED_REASON,
} from '../../src/service/routing-controller.js';
import { SglangRouterSink } from '../../src/sinks/sglang-router.js';
import type { Sink } from '../../src/sinks/sink.js';
import { eventLine } from '../support/event-line.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSglangRouter } from '../support/fake-sglang-router.js';
import { FakeSink } from '../support/fake-sink.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { routingAtRest } from '../support/routing-at-rest.js';
import { finishes, until } from '../support/until.js';

function cell(id: string, address: string, alive = true): RoutableCell {
  return {
    namespace: 'ns',
    pool: 'engine',
    id,
    alive,
    routable: true,
    generation: `g-${id}`,
    address,
  };
}

const controllers: RoutingController[] = [];
const routers: FakeSglangRouter[] = [];
afterEach(async () => {
  for (const router of routers) router.releaseHeld();
  for (const controller of controllers.splice(0)) {
    await finishes(controller.stop(), { what: 'RoutingController.stop() in teardown' });
  }
  await Promise.all(routers.splice(0).map((r) => r.stop()));
});

function setup(sinks: Sink[], options: { sinkApplyDeadlineMs?: number } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const world = {
    cells: [cell('engine-00000', '10.0.0.1:30000'), cell('engine-00001', '10.0.0.2:30000')],
  };
  const events: string[] = [];
  const controller = new RoutingController({
    cells: () => world.cells,
    synced: () => true,
    sinks,
    publish: (event) => events.push(eventLine(event)),
    driftIntervalMs: null,
    clock,
    logger,
    ...options,
  });
  controllers.push(controller);
  const atRest = () => routingAtRest(controller, sinks);
  const started = () => events.filter((l) => l.startsWith('started'));
  return { clock, logger, world, events, controller, atRest, started };
}

describe('RoutingController sink isolation', () => {
  it('completes a run SINK_RUN_WAIT_MS after it began while one sink hangs; the others applied at once', async () => {
    const slow = new FakeSink(() => clock.now());
    const fast = new FakeSink(() => clock.now());
    const { clock, controller, events } = setup([slow, fast]);
    const held = slow.hangNext();
    controller.start();
    await held.called;
    await until(() => fast.calls[0]?.outcome === 'applied', { what: 'the fast sink to apply' });
    await clock.advance(SINK_RUN_WAIT_MS - 1);
    expect(controller.state().running).toBe(true);
    await clock.advance(1);
    await until(() => !controller.state().running, { what: 'the run to complete' });
    expect(events.at(-1)).toBe('completed #1 success');
    held.release();
  });

  it('hands a change to the idle sinks at once while a slow one still applies, and the slow one only the newest state after', async () => {
    const slow = new FakeSink(() => clock.now());
    const fast = new FakeSink(() => clock.now());
    const { clock, controller, world, atRest } = setup([slow, fast]);
    const held = slow.hangNext();
    controller.start();
    await held.called;
    await clock.advance(SINK_RUN_WAIT_MS); // run #1 completes; the slow apply goes on

    world.cells = [cell('engine-00000', '10.0.0.1:30000')];
    controller.trigger('cell ns/engine-00001 gone');
    await until(() => fast.calls.length === 2, { what: 'the fast sink to get the change' });
    expect(fast.applied()).toEqual([
      'engine=10.0.0.1:30000,10.0.0.2:30000',
      'engine=10.0.0.1:30000',
    ]);
    expect(fast.calls[1]?.atMs).toBe(SINK_RUN_WAIT_MS);
    // A sink that was busy when the run began is not waited for: the run ends at once.
    await atRest();
    world.cells = [];
    controller.trigger('cell ns/engine-00000 gone');
    await until(() => fast.calls.length === 3, { what: 'the fast sink to get the next change' });
    expect(slow.calls).toHaveLength(1); // never two applies of one sink at a time

    held.release();
    await until(() => slow.calls.length >= 2, { what: 'the slow sink to get the newest state' });
    await atRest();
    // Right after its apply in flight, the newest state only (the one in between is skipped).
    expect(slow.applied()).toEqual(['engine=10.0.0.1:30000,10.0.0.2:30000', '']);
  });

  it(`begins a run ('${SINK_SETTLED_REASON}') when an apply no run waits for ends, so what it left is looked at`, async () => {
    const slow = new FakeSink(() => clock.now());
    const { clock, controller, atRest, started, events } = setup([slow]);
    const held = slow.hangNext();
    controller.start();
    await held.called;
    await clock.advance(SINK_RUN_WAIT_MS);
    await atRest();
    expect(started()).toEqual(['started #1 started']);

    slow.heldUntilMs = 9_000; // its target failed: held by its backoff
    held.release();
    await until(() => started().length === 2, { what: 'the run begun by the settled apply' });
    expect(events).toContain(`triggered ${SINK_SETTLED_REASON}`);
    await atRest();
    // That run asks for another when the backoff ends.
    slow.heldUntilMs = undefined;
    await clock.advance(9_000 - clock.now() - 1);
    expect(started()).toHaveLength(2);
    await clock.advance(1);
    expect(started().at(-1)).toBe('started #3 requeue');
  });

  it('begins no run when an apply no run waits for ends cleanly: a slow sink is not re-run back to back', async () => {
    const slow = new FakeSink(() => clock.now());
    const { clock, controller, atRest, started, events } = setup([slow]);
    const held = slow.hangNext();
    controller.start();
    await held.called;
    await clock.advance(SINK_RUN_WAIT_MS);
    held.release();
    await until(() => slow.calls[0]?.outcome === 'applied', { what: 'the slow apply to end' });
    await atRest();
    expect(started()).toEqual(['started #1 started']);
    expect(events.filter((l) => l.startsWith('triggered'))).toEqual([]);
    expect(slow.calls).toHaveLength(1);
  });

  it('aborts an apply that outlives its deadline, and looks again', async () => {
    const stuck = new FakeSink(() => clock.now());
    const { clock, controller, started, logger } = setup([stuck], { sinkApplyDeadlineMs: 2_000 });
    const held = stuck.hangNext();
    controller.start();
    const call = await held.called;
    await clock.advance(1_999);
    expect(call.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(call.signal.aborted).toBe(true);
    await until(() => started().length === 2, { what: 'the run after the deadline' });
    expect(started().at(-1)).toBe(`started #2 ${SINK_SETTLED_REASON}`);
    expect(logger.mentioning('did not finish within 2000 ms', 'warn')).toHaveLength(1);
  });

  it('aborts an apply still in flight when the term ends, though no run waits for it', async () => {
    const slow = new FakeSink(() => clock.now());
    const { clock, controller, events } = setup([slow]);
    const held = slow.hangNext();
    controller.start();
    const call = await held.called;
    await clock.advance(SINK_RUN_WAIT_MS);
    await until(() => !controller.state().running, { what: 'the run to complete' });
    await controller.stop();
    expect(call.signal.aborted).toBe(true);
    expect(call.outcome).toBe('aborted');
    expect(events.filter((l) => l.startsWith('triggered'))).toEqual([]);
  });

  it('delivers a router change at once while the readiness gate’s API server answers each write in 4 s', async () => {
    const router = new FakeSink(() => clock.now());
    const gate = new FakeSink(() => clock.now(), 'readiness-gate');
    const { clock, controller, world, atRest } = setup([gate, router]);
    controller.start();
    await atRest();
    // The next gate apply writes two conditions, each answered after 4 s: 8 s in flight.
    const slow = gate.hangNext();
    world.cells = [cell('engine-00000', '10.0.0.1:30000')];
    controller.trigger('cell ns/engine-00001 gone');
    await slow.called;
    await clock.advance(SINK_RUN_WAIT_MS);
    const changedAtMs = clock.now();
    world.cells = [];
    controller.trigger('cell ns/engine-00000 gone');
    await until(() => router.applied().at(-1) === '', { what: 'the router to get the change' });
    expect(router.calls.at(-1)?.atMs).toBe(changedAtMs);
    await clock.advance(8_000 - SINK_RUN_WAIT_MS);
    slow.release();
    await until(() => gate.applied().at(-1) === '', { what: 'the gate to catch up' });
    expect(gate.calls.at(-1)?.atMs).toBe(8_000);
  });

  it('removes a dead cell from a healthy router within 1 s while a second router never answers POST /workers', async () => {
    const healthy = new FakeSglangRouter({ autoComplete: true });
    const dead = new FakeSglangRouter({ autoComplete: true });
    routers.push(healthy, dead);
    await Promise.all([healthy.start(), dead.start()]);
    dead.holdAnswers = true;
    dead.holdOnly = 'POST /workers';
    const clock = new FakeClock();
    // One sink per router, as main.ts builds them.
    const sinks = [healthy, dead].map(
      (router) => new SglangRouterSink({ targets: [{ pool: 'engine', url: router.url }], clock }),
    );
    const events: string[] = [];
    const world = {
      cells: Array.from({ length: 10 }, (_, i) =>
        cell(`engine-${String(i).padStart(5, '0')}`, `10.0.0.${i + 1}:30000`),
      ),
    };
    const controller = new RoutingController({
      cells: () => world.cells,
      synced: () => true,
      sinks,
      publish: (event) => events.push(eventLine(event)),
      driftIntervalMs: null,
      clock,
    });
    controllers.push(controller);
    controller.start();
    await until(() => healthy.listed().length === 10, { what: 'the healthy router to list 10' });
    await until(() => dead.held > 0, { what: 'the dead router to hold a POST' });

    const diedAtMs = clock.now();
    world.cells = world.cells.map((c, i) => (i === 0 ? { ...c, alive: false } : c));
    controller.trigger('cell ns/engine-00000 not alive');
    // Before isolation the run waited on the dead router's POSTs (5 s each, on this clock), so
    // the healthy router kept the dead cell; now the run ends SINK_RUN_WAIT_MS after it began.
    await clock.advance(SINK_RUN_WAIT_MS);
    const deletes = () => healthy.requests.filter((r) => r.startsWith('DELETE /workers/'));
    await until(() => deletes().length === 1, {
      what: 'the healthy router to be told to remove the dead cell',
    });
    expect(clock.now() - diedAtMs).toBeLessThanOrEqual(1_000);
    expect(dead.listed()).toEqual([]);
  });
});
