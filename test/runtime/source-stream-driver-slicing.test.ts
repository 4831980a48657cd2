/**
 * A large `replace` (more than REPLACE_SLICE_SIZE objects), first or relist, is applied in slices
 * across event-loop turns, on RUNTIME.md's conditions ("Large replaces may be applied in slices"):
 * each slice one store write of upserts, then last the synthesised deletions, each followed by its
 * `onAffected`; the store ends equal to one atomic `apply(replace)`; every parent that apply would
 * report is reported at least once after its last change; synced only after the last slice of the
 * first replace; events arriving meanwhile wait. All timing is the fake clock's.
 */
import { describe, expect, it } from 'vitest';
import { ObjectStore, type Source, type SourceEvent, SourceStreamDriver } from '../../src/index.js';
import type { ReplaceInParts } from '../../src/runtime/object-store.js';
import { REPLACE_SLICE_SIZE } from '../../src/runtime/source-stream-driver.js';
import { FakeClock } from '../support/fake-clock.js';
import { until } from '../support/until.js';

const SIZE = REPLACE_SLICE_SIZE * 2 + 500;

interface Obj {
  n: number;
  /** Moves the object to another parent when set. */
  parent?: string;
  version?: number;
}

const key = (i: number): string => `o${String(i).padStart(5, '0')}`;

/** `o00042` → parent `p0010` (4 objects per parent); every 7th object is unmappable. */
const keyMap = (o: Obj): string | undefined =>
  o.parent ?? (o.n % 7 === 6 ? undefined : `p${String(Math.floor(o.n / 4)).padStart(4, '0')}`);

function world(size: number, from = 0): Map<string, Obj> {
  return new Map(Array.from({ length: size }, (_, i) => [key(from + i), { n: from + i }]));
}

/**
 * The relist of `world(SIZE)`: drops o00000..o00199 (deletes; p0000..p0049 vanish), moves every
 * 10th object to parent `moved-…` (re-parents), bumps every 3rd object's version (keeps, changed),
 * makes o00301 unmappable (it was stored), adds
 * o90000.. (new), and keeps the rest unchanged.
 */
function relistOf(size: number): Map<string, Obj> {
  const next = new Map<string, Obj>();
  for (let i = 200; i < size; i += 1) {
    const o: Obj = { n: i };
    if (i % 10 === 0) o.parent = `moved-${String(i % 40).padStart(2, '0')}`;
    if (i % 3 === 0) o.version = 2;
    next.set(key(i), o);
  }
  next.set(key(301), { n: 6 }); // same key, now unmappable (6 % 7 === 6)
  for (let i = 0; i < 50; i += 1) next.set(key(90_000 + i), { n: 90_000 + i });
  return next;
}

/** A store that records each write (`upsert` slice or `finish`) in `log`. */
class RecordingStore extends ObjectStore<Obj> {
  readonly log: string[] = [];
  override beginReplace(): ReplaceInParts<Obj> {
    const inner = super.beginReplace();
    this.log.push('begin');
    return {
      upsert: (objects) => {
        const slice = [...objects];
        this.log.push(`upsert ${slice.length}`);
        return inner.upsert(slice);
      },
      finish: () => {
        this.log.push('finish');
        return inner.finish();
      },
    };
  }
  override apply(event: SourceEvent<Obj>): Set<string> {
    this.log.push(`apply ${event.type}`);
    return super.apply(event);
  }
}

/** Every parent and its members, for comparing whole stores. */
function snapshot(store: ObjectStore<Obj>): Map<string, string> {
  const out = new Map<string, string>();
  for (const parent of [...store.parentKeys()].sort()) {
    out.set(parent, JSON.stringify(store.getByParent(parent)));
  }
  return out;
}

function atomic(...replaces: Array<Map<string, Obj>>): {
  store: ObjectStore<Obj>;
  last: Set<string>;
} {
  const store = new ObjectStore<Obj>(keyMap);
  let last = new Set<string>();
  for (const objects of replaces) last = store.apply({ type: 'replace', objects });
  return { store, last };
}

/** A source whose stream yields the given events, noting each `next()` after the first, then hangs. */
function scripted(events: Array<SourceEvent<Obj>>, pulls: string[]): Source<Obj> {
  return async function* () {
    for (const event of events) {
      yield event;
      pulls.push(`pulled after ${event.type}`);
    }
    await new Promise(() => {});
  };
}

interface Harness {
  store: RecordingStore;
  driver: SourceStreamDriver<Obj>;
  /** One entry per `onAffected`: the parents, the store write it followed, whether synced then, the store's snapshot. */
  calls: Array<{ parents: string[]; after: string; synced: boolean; state: Map<string, string> }>;
  order: string[];
  controller: AbortController;
  running: Promise<void>;
}

function start(source: Source<Obj>): Harness {
  const store = new RecordingStore(keyMap);
  const calls: Harness['calls'] = [];
  const order: string[] = [];
  const holder: { driver?: SourceStreamDriver<Obj> } = {};
  const driver = new SourceStreamDriver<Obj>({
    source,
    store,
    onAffected: (parents) => {
      calls.push({
        parents,
        after: store.log.at(-1) ?? '',
        synced: holder.driver?.synced ?? false,
        state: snapshot(store),
      });
      order.push('onAffected');
    },
    retryDelayMs: 1_000,
    clock: new FakeClock(),
  });
  holder.driver = driver;
  const controller = new AbortController();
  const running = driver.run(controller.signal);
  return { store, driver, calls, order, controller, running };
}

/**
 * Checks RUNTIME.md's "reported at least once after its last change": for every parent the atomic
 * apply reports, the last `onAffected` naming it comes at or after the last write that changed it.
 */
function expectReportedAfterLastChange(
  calls: Harness['calls'],
  before: Map<string, string>,
  expected: Set<string>,
): void {
  const lastChange = new Map<string, number>();
  const lastReport = new Map<string, number>();
  let previous = before;
  calls.forEach((call, i) => {
    const parents = new Set([...previous.keys(), ...call.state.keys()]);
    for (const parent of parents) {
      if (previous.get(parent) !== call.state.get(parent)) lastChange.set(parent, i);
    }
    for (const parent of call.parents) lastReport.set(parent, i);
    previous = call.state;
  });
  for (const parent of expected) {
    expect(lastReport.has(parent), `${parent} reported`).toBe(true);
    expect(lastReport.get(parent) as number).toBeGreaterThanOrEqual(lastChange.get(parent) ?? -1);
  }
  for (const [parent] of lastChange) expect(expected.has(parent), `${parent} expected`).toBe(true);
}

describe('SourceStreamDriver: a large replace is applied in slices', () => {
  it('the first one: slices of upserts with a turn between, handed on each, synced only after the last', async () => {
    const h = start(scripted([{ type: 'replace', objects: world(SIZE) }], []));
    setImmediate(() => h.order.push('event-loop turn'));
    await h.driver.waitForSync();

    expect(h.store.log).toEqual(['begin', 'upsert 1000', 'upsert 1000', 'upsert 500', 'finish']);
    // Three upsert slices, each handed on; `finish` has nothing to delete (an empty store).
    expect(h.calls.map((c) => c.after)).toEqual(['upsert 1000', 'upsert 1000', 'upsert 500']);
    const turn = h.order.indexOf('event-loop turn');
    expect(turn).toBeGreaterThan(0);
    expect(turn).toBeLessThan(h.order.length - 1);
    for (const call of h.calls) {
      expect(call.parents).toEqual([...call.parents].sort());
      expect(call.synced).toBe(false);
    }
    expect(h.driver.synced).toBe(true);

    const reference = atomic(world(SIZE));
    expect(snapshot(h.store)).toEqual(snapshot(reference.store));
    expectReportedAfterLastChange(h.calls, new Map(), reference.last);
    h.controller.abort();
    await h.running;
  });

  it('sweeps the synthesised deletions in a turn of their own, then marks the sync in another', async () => {
    const h = start(scripted([{ type: 'replace', objects: world(SIZE) }], []));
    // One mark per turn of the event loop, in the same log as the store's writes.
    const tick = (): void => {
      if (h.driver.synced) return;
      h.store.log.push('turn');
      setImmediate(tick);
    };
    setImmediate(tick);
    await h.driver.waitForSync();
    const writes = h.store.log;
    const lastUpsert = writes.lastIndexOf('upsert 500');
    expect(lastUpsert).toBeGreaterThan(0);
    expect(writes.slice(lastUpsert + 1, writes.indexOf('finish'))).toContain('turn');
    // And synced a turn after the sweep, so what wakes on the sync does not run in its task.
    expect(writes.slice(writes.indexOf('finish') + 1)).toContain('turn');
    h.controller.abort();
    await h.running;
  });

  it('a relist that deletes, re-parents, keeps and unmaps: upserts first, deletions last, the atomic result', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const h = start(async function* () {
      yield { type: 'replace', objects: world(SIZE) };
      await released;
      yield { type: 'replace', objects: relistOf(SIZE) };
      await new Promise(() => {});
    });
    await h.driver.waitForSync();
    const before = snapshot(h.store);
    h.calls.length = 0;
    h.store.log.length = 0;
    release();
    await until(() => h.store.log.includes('finish'), { what: 'the relist to finish' });

    const relist = relistOf(SIZE);
    expect(relist.size).toBeGreaterThan(REPLACE_SLICE_SIZE);
    expect(h.store.log).toEqual(['begin', 'upsert 1000', 'upsert 1000', 'upsert 350', 'finish']);
    expect(h.calls.map((c) => c.after)).toEqual([
      'upsert 1000',
      'upsert 1000',
      'upsert 350',
      'finish',
    ]);
    // No deletion before the last slice: the dropped objects' parents are still there until then.
    for (const call of h.calls.slice(0, -1)) expect(call.state.has('p0000')).toBe(true);
    expect(h.calls.at(-1)?.state.has('p0000')).toBe(false);
    // The last slice is the synthesised deletions: vanished and now-unmappable objects' parents.
    expect(h.calls.at(-1)?.parents).toContain('p0000');
    expect(h.calls.at(-1)?.parents).toContain('p0075'); // o00301 became unmappable

    const reference = atomic(world(SIZE), relist);
    expect(snapshot(h.store)).toEqual(snapshot(reference.store));
    expect(h.store.size).toBe(reference.store.size);
    expect(h.store.get(key(301))).toBeUndefined();
    expect(h.store.get(key(210))).toEqual({ n: 210, parent: 'moved-10', version: 2 });
    expect(new Set(h.calls.flatMap((c) => c.parents))).toEqual(reference.last);
    expectReportedAfterLastChange(h.calls, before, reference.last);
    h.controller.abort();
    await h.running;
  });

  it('events arriving during the slices wait until the replace is done', async () => {
    const pulls: string[] = [];
    const h = start(
      scripted(
        [
          { type: 'replace', objects: world(SIZE) },
          { type: 'upsert', key: 'late', object: { n: 1, parent: 'late-parent' } },
          { type: 'delete', key: key(0) },
        ],
        pulls,
      ),
    );
    await h.driver.waitForSync();
    await until(() => h.calls.length >= 5, { what: 'five calls' });
    // The stream was not even read again before the replace's last slice.
    expect(h.store.log).toEqual([
      'begin',
      'upsert 1000',
      'upsert 1000',
      'upsert 500',
      'finish',
      'apply upsert',
      'apply delete',
    ]);
    expect(h.calls.map((c) => c.parents)).toEqual([
      expect.any(Array),
      expect.any(Array),
      expect.any(Array),
      ['late-parent'],
      ['p0000'],
    ]);
    expect(pulls[0]).toBe('pulled after replace');
    h.controller.abort();
    await h.running;
  });

  it('a replace of exactly REPLACE_SLICE_SIZE objects is one atomic apply', async () => {
    const h = start(scripted([{ type: 'replace', objects: world(REPLACE_SLICE_SIZE) }], []));
    await h.driver.waitForSync();
    expect(h.store.log).toEqual(['apply replace']);
    expect(h.calls.length).toBe(1);
    h.controller.abort();
    await h.running;
  });

  it('is not synced when the stream is aborted between slices of the first replace', async () => {
    const store = new ObjectStore<Obj>(keyMap);
    const controller = new AbortController();
    const driver = new SourceStreamDriver<Obj>({
      source: scripted([{ type: 'replace', objects: world(SIZE) }], []),
      store,
      onAffected: () => {
        if (!controller.signal.aborted) controller.abort();
      },
      retryDelayMs: 1_000,
      clock: new FakeClock(),
    });
    await driver.run(controller.signal);
    expect(driver.synced).toBe(false);
    expect(store.size).toBeGreaterThan(0);
    expect(store.size).toBeLessThan(SIZE);
  });
});
