import { afterEach, describe, expect, it } from 'vitest';
import type { RoutableCell } from '../../src/pools/routing-state.js';
import {
  MANY_CELLS_CHANGED_REASON,
  MAX_CELL_REASONS_PER_RUN,
  PENDING_RECHECK_MS,
  RoutingController,
} from '../../src/service/routing-controller.js';
import { eventLine } from '../support/event-line.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeSink, targetFailure, targetStatus } from '../support/fake-sink.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { routingAtRest } from '../support/routing-at-rest.js';
import { finishes } from '../support/until.js';

function cell(
  id: string,
  address: string | null,
  overrides: Partial<RoutableCell> = {},
): RoutableCell {
  return {
    namespace: 'ns',
    pool: 'engine',
    id,
    alive: true,
    routable: address !== null,
    generation: `g-${id}`,
    address,
    ...overrides,
  };
}

interface Setup {
  sinks?: FakeSink[];
  synced?: boolean;
  cells?: RoutableCell[];
  driftIntervalMs?: number | null;
}

const controllers: RoutingController[] = [];
/** The sinks of each controller made, for `atRest`. */
const sinksOf = new Map<RoutingController, readonly FakeSink[]>();
afterEach(async () => {
  for (const controller of controllers.splice(0)) {
    await finishes(controller.stop(), { what: 'RoutingController.stop() in teardown' });
  }
  sinksOf.clear();
});

/** Waits until the newest controller did all it can without the clock or the test. */
function atRest(): Promise<void> {
  const controller = controllers.at(-1);
  if (!controller) throw new Error('atRest: no controller was made');
  return routingAtRest(controller, sinksOf.get(controller) ?? []);
}

function setup(options: Setup = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const world = {
    synced: options.synced ?? true,
    cells: options.cells ?? [cell('engine-00000', '10.0.0.1:30000')],
  };
  const events: string[] = [];
  const controller = new RoutingController({
    cells: () => world.cells,
    synced: () => world.synced,
    sinks: options.sinks ?? [],
    publish: (event) => events.push(eventLine(event)),
    driftIntervalMs: options.driftIntervalMs === undefined ? null : options.driftIntervalMs,
    clock,
    logger,
  });
  controllers.push(controller);
  sinksOf.set(controller, options.sinks ?? []);
  return { clock, logger, world, events, controller };
}

describe('RoutingController pipeline', () => {
  it('renders, validates and deploys the alive cells to every sink when a term begins', async () => {
    const a = new FakeSink();
    const b = new FakeSink();
    const { controller, events, world } = setup({ sinks: [a, b] });
    world.cells = [
      cell('engine-00001', '10.0.0.2:30000'),
      cell('engine-00000', '10.0.0.1:30000'),
      cell('engine-00002', '10.0.0.3:30000', { alive: false }),
    ];
    controller.start();
    await atRest();
    expect(events).toEqual([
      'started #1 started',
      'render #1',
      'validate #1',
      'deploy #1',
      'completed #1 success',
    ]);
    expect(a.applied()).toEqual(['engine=10.0.0.1:30000,10.0.0.2:30000']);
    expect(b.calls.map((c) => c.desired)).toEqual(a.calls.map((c) => c.desired));
    expect(a.calls[0]!.desired.pools[0]!.cells[0]).toEqual({
      cell: 'engine-00000',
      generation: 'g-engine-00000',
      address: '10.0.0.1:30000',
    });
  });

  it('renders nothing before the cells have synced: render fails and no sink is called', async () => {
    const sink = new FakeSink();
    const { controller, events, world, clock } = setup({ sinks: [sink], synced: false });
    controller.start();
    await atRest();
    expect(events).toEqual([
      'started #1 started',
      'failed #1 render: the cells have not synced yet; nothing is rendered before sync',
      'completed #1 failure',
    ]);
    expect(sink.calls).toHaveLength(0);
    expect(controller.state().lastError?.phase).toBe('render');

    world.synced = true;
    await clock.advance(1_000); // the coordinator's first retry
    expect(events.slice(3)).toEqual([
      'started #2 retry',
      'render #2',
      'validate #2',
      'deploy #2',
      'completed #2 success',
    ]);
    expect(sink.calls).toHaveLength(1);
  });

  it('refuses in validate a state where two cells claim one address, and deploys nothing', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({
      sinks: [sink],
      cells: [cell('engine-00000', '10.0.0.1:30000'), cell('engine-00001', '10.0.0.1:30000')],
    });
    controller.start();
    await atRest();
    expect(events).toEqual([
      'started #1 started',
      'render #1',
      'failed #1 validate: address 10.0.0.1:30000 is claimed by two cells, ns/engine-00000 and ns/engine-00001; refusing to route to either until that is resolved',
      'completed #1 failure',
    ]);
    expect(sink.calls).toHaveLength(0);
  });

  it('refuses in validate an address that is not host:port', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({
      sinks: [sink],
      cells: [cell('engine-00000', '10.0.0.1')],
    });
    controller.start();
    await atRest();
    expect(events[2]).toBe(
      'failed #1 validate: cell ns/engine-00000 has address "10.0.0.1", which is not host:port',
    );
    expect(sink.calls).toHaveLength(0);
  });

  it('applies every sink even when one fails; a target failure is the sink’s, and the run succeeds', async () => {
    const good = new FakeSink();
    const bad = new FakeSink();
    bad.failNext(targetFailure('http://router-b:30000', 'connection refused'));
    const { controller, events } = setup({ sinks: [bad, good] });
    controller.start();
    await atRest();
    expect(good.calls.map((c) => c.outcome)).toEqual(['applied']);
    expect(bad.calls.map((c) => c.outcome)).toEqual(['failed']);
    expect(events).toEqual([
      'started #1 started',
      'render #1',
      'validate #1',
      'deploy #1',
      'completed #1 success',
    ]);
    expect(controller.state()).toMatchObject({ consecutiveFailures: 0 });
    expect(controller.state().lastError).toBeUndefined();
  });

  it('passes on an error a sink throws that is not a SinkApplyError', async () => {
    const sink = new FakeSink();
    sink.failNext(new TypeError('sink bug'));
    const { controller, events } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    expect(events).toContain('failed #1 deploy: sink bug');
    expect(controller.state().lastError?.cause).toBeInstanceOf(TypeError);
  });

  it('with no sink configured, deploy logs the desired state and succeeds: info the first time, debug after', async () => {
    const { controller, events, logger, clock, world } = setup({ driftIntervalMs: 10_000 });
    const message = 'desired routing state rendered; no sink configured, nothing to deploy';
    controller.start();
    await atRest();
    expect(events.at(-1)).toBe('completed #1 success');
    expect(logger.mentioning(message).map((e) => [e.level, e.obj])).toEqual([
      ['info', { pools: 1, cells: 1, byPool: { 'ns/engine': 1 } }],
    ]);

    await clock.advance(10_000); // drift: the same state again
    expect(logger.mentioning(message).map((e) => e.level)).toEqual(['info', 'debug']);

    world.cells = [...world.cells, cell('engine-00001', '10.0.0.2:30000')];
    controller.trigger('cell ns/engine-00001 appeared');
    await atRest();
    // A changed state is no news either: every reconcile in a changing fleet renders one.
    expect(logger.mentioning(message).map((e) => e.level)).toEqual(['info', 'debug', 'debug']);
  });
});

describe('RoutingController triggers and timers', () => {
  it('ignores triggers unless a term runs: before start, and after stop', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    controller.trigger('before');
    await atRest();
    expect(events).toEqual([]);
    expect(controller.acting).toBe(false);

    controller.start();
    await atRest();
    expect(controller.acting).toBe(true);
    await controller.stop();
    expect(controller.acting).toBe(false);
    controller.trigger('after');
    await atRest();
    expect(events.filter((e) => e.includes('after'))).toEqual([]);
    expect(sink.calls).toHaveLength(1);
  });

  it('runs a trigger at once, and collapses triggers that arrive while one runs into one follow-up', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    const held = sink.hangNext();
    controller.trigger('cell ns/engine-00001 appeared');
    await held.called;
    controller.trigger('cell ns/engine-00002 appeared');
    controller.trigger('cell ns/engine-00003 gone');
    controller.trigger('cell ns/engine-00002 appeared');
    held.release();
    await atRest();
    expect(events.slice(5)).toEqual([
      'triggered cell ns/engine-00001 appeared',
      'started #2 cell ns/engine-00001 appeared',
      'render #2',
      'validate #2',
      'triggered cell ns/engine-00002 appeared',
      'triggered cell ns/engine-00003 gone',
      'triggered cell ns/engine-00002 appeared',
      'deploy #2',
      'completed #2 success',
      'started #3 cell ns/engine-00002 appeared,cell ns/engine-00003 gone',
      'render #3',
      'validate #3',
      'deploy #3',
      'completed #3 success',
    ]);
    expect(sink.calls).toHaveLength(3);
  });

  it('runs drift every driftIntervalMs after the last run completed', async () => {
    const sink = new FakeSink();
    const { controller, events, clock: c } = setup({ sinks: [sink], driftIntervalMs: 30_000 });
    controller.start();
    await atRest();
    await c.advance(29_999);
    expect(sink.calls).toHaveLength(1);
    await c.advance(1);
    expect(events.at(-5)).toBe('started #2 drift');
    await c.advance(30_000);
    expect(events.filter((e) => e.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 drift',
      'started #3 drift',
    ]);
  });

  it('asks to run again PENDING_RECHECK_MS after a deploy that left changes pending on a target', async () => {
    const sink = new FakeSink();
    sink.statuses = [
      targetStatus({
        pending: [
          { operation: 'add', endpoint: 'http://10.0.0.1:30000', since: '2025-06-01T12:00:00Z' },
        ],
      }),
    ];
    const { controller, events, clock } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    expect(sink.calls).toHaveLength(1);
    await clock.advance(PENDING_RECHECK_MS - 1);
    expect(sink.calls).toHaveLength(1);
    sink.statuses = [targetStatus()]; // the router caught up
    await clock.advance(1);
    expect(events.slice(5)).toEqual([
      'started #2 requeue',
      'render #2',
      'validate #2',
      'deploy #2',
      'completed #2 success',
    ]);
    await clock.advance(10 * PENDING_RECHECK_MS);
    expect(sink.calls).toHaveLength(2); // nothing pending any more: no further recheck
  });

  it('does not recheck a router add held by its own backoff (retryAt): the backoff runs it', async () => {
    const sink = new FakeSink();
    sink.statuses = [
      targetStatus({
        pending: [
          {
            operation: 'add',
            endpoint: 'http://10.0.0.1:30000',
            since: '2025-06-01T12:00:00Z',
            reason: 'the router answered 409 (already registered) without a worker id',
            retryAt: '2025-06-01T12:00:30Z',
          },
        ],
      }),
    ];
    const { controller, clock } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    await clock.advance(10 * PENDING_RECHECK_MS);
    expect(sink.calls).toHaveLength(1);
  });

  it('does not look again after a deploy that left nothing pending', async () => {
    const sink = new FakeSink();
    sink.statuses = [targetStatus()];
    const { controller, clock } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    await clock.advance(10 * PENDING_RECHECK_MS);
    expect(sink.calls).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('cancels the pending recheck when the term ends', async () => {
    const sink = new FakeSink();
    sink.statuses = [
      targetStatus({ pending: [{ operation: 'remove', endpoint: 'http://x:1', since: 'now' }] }),
    ];
    const { controller, clock } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    await controller.stop();
    await clock.advance(10 * PENDING_RECHECK_MS);
    expect(sink.calls).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('RoutingController stop', () => {
  it('aborts the running deploy signal at once and calls no sink afterwards', async () => {
    const sink = new FakeSink();
    const { controller, events, clock } = setup({ sinks: [sink], driftIntervalMs: 1_000 });
    const held = sink.hangNext();
    controller.start();
    const call = await held.called;
    const stopped = controller.stop();
    expect(call.signal.aborted).toBe(true);
    await stopped;
    expect(call.outcome).toBe('aborted');
    expect(events.slice(-1)).toEqual(['completed #1 aborted']);
    expect(events).not.toContain('deploy #1');
    controller.trigger('late');
    await clock.advance(120_000);
    expect(sink.calls).toHaveLength(1);
    expect(controller.state()).toMatchObject({ running: false, pendingReasons: [] });
  });

  it('waits for a sink that ignores its signal, and counts its run as aborted, not failed', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    const held = sink.hangNext({ honourSignal: false });
    controller.start();
    await held.called;
    let stopped = false;
    const stopping = controller.stop().then(() => {
      stopped = true;
    });
    await atRest();
    expect(stopped).toBe(false);
    held.fail(new Error('connection reset'));
    await stopping;
    expect(events.slice(-1)).toEqual(['completed #1 aborted']);
    expect(events.some((e) => e.startsWith('failed'))).toBe(false);
  });

  it('begins a new term on start() after stop(), with a run at once', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    await controller.stop();
    controller.start();
    await atRest();
    expect(events.filter((e) => e.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 started',
    ]);
    expect(sink.calls).toHaveLength(2);
  });
  it('begins a term asked for while the previous one is still stopping, once that has settled', async () => {
    // Leadership lost and won back quickly while a sink is still unwinding its aborted request.
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    const held = sink.hangNext({ honourSignal: false });
    controller.start();
    await held.called;
    const stopping = controller.stop();
    expect(() => controller.start()).not.toThrow();
    expect(controller.acting).toBe(true);
    await atRest();
    expect(sink.calls).toHaveLength(1); // nothing new runs while the old apply is in flight
    held.fail(new Error('connection reset'));
    await stopping;
    await atRest();
    expect(events.filter((e) => e.startsWith('started') || e.startsWith('completed'))).toEqual([
      'started #1 started',
      'completed #1 aborted',
      'started #2 started',
      'completed #2 success',
    ]);
    expect(sink.calls).toHaveLength(2);
    controller.trigger('cell ns/engine-00001 appeared');
    await atRest();
    expect(sink.calls).toHaveLength(3);
  });

  it('does not begin the waiting term when it was stopped again before the old one settled', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    const held = sink.hangNext({ honourSignal: false });
    controller.start();
    await held.called;
    void controller.stop();
    controller.start();
    const stoppedAgain = controller.stop();
    held.release();
    await stoppedAgain;
    await atRest();
    expect(controller.acting).toBe(false);
    expect(events.filter((e) => e.startsWith('started'))).toEqual(['started #1 started']);
    expect(sink.calls).toHaveLength(1);
  });
});

describe('RoutingController desired state', () => {
  it('is null before the cells have synced', () => {
    const { controller } = setup({ synced: false });
    expect(controller.desired()).toBeNull();
  });

  it('is rendered locally when not acting (a follower), without calling any sink', () => {
    const sink = new FakeSink();
    const { controller } = setup({ sinks: [sink] });
    expect(controller.desired()).toEqual({
      pools: [
        {
          namespace: 'ns',
          pool: 'engine',
          cells: [
            { cell: 'engine-00000', generation: 'g-engine-00000', address: '10.0.0.1:30000' },
          ],
        },
      ],
    });
    expect(sink.calls).toHaveLength(0);
    expect(controller.state()).toMatchObject({ running: false, consecutiveFailures: 0 });
  });

  it('is what the pipeline last rendered while acting', async () => {
    const sink = new FakeSink();
    const { controller, world } = setup({ sinks: [sink] });
    controller.start();
    await atRest();
    world.cells = [cell('engine-00009', '10.0.0.9:30000')];
    expect(controller.desired()).toEqual(sink.calls[0]!.desired);
  });

  it('reports the status of every sink target', () => {
    const a = new FakeSink();
    const b = new FakeSink();
    a.statuses = [targetStatus({ target: 'http://a:1' })];
    b.statuses = [targetStatus({ target: 'http://b:1' }), targetStatus({ target: 'http://c:1' })];
    const { controller } = setup({ sinks: [a, b] });
    expect(controller.sinkStatus().map((s) => s.target)).toEqual([
      'http://a:1',
      'http://b:1',
      'http://c:1',
    ]);
  });
});

describe('RoutingController per-target backoff and bounded reasons', () => {
  it('asks to run again when the earliest held sink target may be called again', async () => {
    const sink = new FakeSink(() => clock.now());
    const { controller, clock, events } = setup({ sinks: [sink] });
    sink.failNext();
    sink.heldUntilMs = 5_000;
    controller.start();
    await atRest();
    expect(sink.calls).toHaveLength(1);
    sink.heldUntilMs = undefined;
    await clock.advance(4_999);
    expect(sink.calls).toHaveLength(1); // no retry of its own: the run succeeded
    await clock.advance(1);
    expect(events.filter((l) => l.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 requeue',
    ]);
    expect(events.some((l) => l.startsWith('triggered'))).toBe(false);
    expect(sink.calls.at(-1)?.atMs).toBe(5_000);
  });

  it('moves the requeue earlier when a later run finds a target due sooner, and never runs the replaced one', async () => {
    const sink = new FakeSink(() => clock.now());
    const { controller, clock, events } = setup({ sinks: [sink] });
    sink.heldUntilMs = 10_000;
    controller.start();
    await atRest();
    sink.heldUntilMs = 3_000;
    controller.trigger('cell change');
    await atRest();
    sink.heldUntilMs = undefined;
    await clock.advance(10_000);
    expect(events.filter((l) => l.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 cell change',
      'started #3 requeue',
    ]);
    expect(sink.calls.map((c) => c.atMs)).toEqual([0, 0, 3_000]);
  });

  it('runs drift at its interval while a target stays held longer: its backoff no longer stops drift', async () => {
    const held = new FakeSink(() => clock.now());
    const healthy = new FakeSink(() => clock.now());
    const { controller, clock, events } = setup({ sinks: [held, healthy], driftIntervalMs: 2_000 });
    held.heldUntilMs = 60_000;
    controller.start();
    await atRest();
    await clock.advance(6_000);
    expect(events.filter((l) => l.startsWith('started'))).toEqual([
      'started #1 started',
      'started #2 drift',
      'started #3 drift',
      'started #4 drift',
    ]);
    expect(healthy.calls.map((c) => c.atMs)).toEqual([0, 2_000, 4_000, 6_000]);
  });

  it('passes at most MAX_CELL_REASONS_PER_RUN distinct cell reasons to one run, then one shared reason', async () => {
    const sink = new FakeSink();
    const { controller, events } = setup({ sinks: [sink] });
    const held = sink.hangNext();
    controller.start();
    await held.called;
    for (let i = 0; i < MAX_CELL_REASONS_PER_RUN + 10; i += 1) {
      controller.triggerForCell(`cell ns/engine-${i} appeared`);
      controller.triggerForCell(`cell ns/engine-${i} appeared`);
    }
    expect(controller.state().pendingReasons).toHaveLength(MAX_CELL_REASONS_PER_RUN + 1);
    expect(controller.state().pendingReasons.at(-1)).toBe(MANY_CELLS_CHANGED_REASON);
    held.release();
    await atRest();
    // The budget starts again with the next run.
    controller.triggerForCell('cell ns/engine-99 gone');
    await atRest();
    expect(events.filter((l) => l.startsWith('started')).at(-1)).toBe(
      'started #3 cell ns/engine-99 gone',
    );
  });
});

describe('RoutingController panic threshold', () => {
  it('renders panic into the desired state and publishes pool.panic on entry and exit only', async () => {
    const sink = new FakeSink();
    const clock = new FakeClock();
    const events: string[] = [];
    const world = {
      cells: [cell('engine-00000', '10.0.0.1:30000'), cell('engine-00001', '10.0.0.2:30000')],
    };
    const controller = new RoutingController({
      cells: () => world.cells,
      synced: () => true,
      sinks: [sink],
      publish: (event) => events.push(eventLine(event)),
      driftIntervalMs: null,
      panicThresholdPercent: 50,
      clock,
      logger: new RecordingLogger(),
    });
    controllers.push(controller);
    sinksOf.set(controller, [sink]);
    controller.start();
    await atRest();
    world.cells = [
      cell('engine-00000', '10.0.0.1:30000', { alive: false }),
      cell('engine-00001', '10.0.0.2:30000', { alive: false }),
    ];
    controller.trigger('cells died');
    await atRest();
    controller.trigger('again');
    await atRest();
    expect(sink.calls.at(-1)?.desired.pools[0]?.capacity).toEqual({
      routable: 0,
      known: 2,
      thresholdPercent: 50,
      panic: true,
    });
    expect(controller.panicEntries()).toEqual([
      expect.objectContaining({ namespace: 'ns', pool: 'engine', routable: 0, known: 2 }),
    ]);
    world.cells = [cell('engine-00000', '10.0.0.1:30000'), world.cells[1]!];
    controller.trigger('one back');
    await atRest();
    expect(events.filter((e) => e.startsWith('pool.panic'))).toEqual([
      'pool.panic ns/engine entered 0/2',
      'pool.panic ns/engine left 1/2',
    ]);
    expect(controller.panicEntries()).toEqual([]);
  });
});
