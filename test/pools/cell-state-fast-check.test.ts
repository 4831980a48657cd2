import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { podKey } from '../../src/model/pod.js';
import { cellKeyMap, parentKeyOf } from '../../src/pools/cell-key.js';
import {
  deriveCellState,
  MAX_CELL_SIZE,
  MAX_LISTED_PER_REASON,
} from '../../src/pools/cell-state.js';
import { LWS_LABELS } from '../../src/pools/labels.js';
import { MAX_POD_TEXT_LENGTH } from '../../src/pools/pod-text.js';
import { ObjectStore } from '../../src/runtime/object-store.js';
import { lwsPod } from '../support/lws-pod.js';

// Issue 36, finding 1: every number a pod supplies (size annotation, worker and group indices)
// is written by whoever may create a pod. These properties feed the store and `deriveCellState`
// values chosen to hurt and hold the work, the memory and the output to what the members are.

/** Numbers as a hostile pod owner writes them: huge, signed, padded, not decimal at all. */
const hostileNumber = fc.oneof(
  fc.constantFrom(
    '999999999',
    '9999999999',
    String(MAX_CELL_SIZE),
    String(MAX_CELL_SIZE + 1),
    '0',
    '-1',
    '1e9',
    '0x10',
    ' 5',
    '5 ',
    '000000001',
    '١٢',
    'Infinity',
    'NaN',
    '',
  ),
  fc.integer({ min: 0, max: 999_999_999 }).map(String),
  fc.integer({ min: 0, max: 8 }).map(String),
  fc.string({ maxLength: 12 }),
  fc.nat(40).map((n) => '9'.repeat(n)),
);

/** A pool label value: usually a real one, sometimes empty or longer than a label may be. */
const hostilePool = fc.oneof(
  fc.constantFrom('engine', 'engine', 'other'),
  fc.constantFrom('', 'x'.repeat(64), 'x'.repeat(10_000)),
);

interface HostilePod {
  pool: string;
  group: string | null;
  worker: string | null;
  size: string | null;
  ready: boolean;
  deleting: boolean;
  /** Extra annotation text, up to 300 KB (what the API server would accept and more). */
  junk: number;
}

const hostilePod: fc.Arbitrary<HostilePod> = fc.record({
  pool: hostilePool,
  group: fc.option(fc.oneof(fc.constantFrom('0', '1'), hostileNumber), { nil: null }),
  worker: fc.option(hostileNumber, { nil: null }),
  size: fc.option(hostileNumber, { nil: null }),
  ready: fc.boolean(),
  deleting: fc.boolean(),
  junk: fc.constantFrom(0, 0, 300_000),
});

function toPod(hostile: HostilePod, i: number) {
  return lwsPod({
    name: `p-${i}`,
    pool: hostile.pool,
    group: hostile.group,
    worker: hostile.worker,
    size: hostile.size,
    ready: hostile.ready,
    deleting: hostile.deleting,
    annotations: hostile.junk > 0 ? { junk: 'j'.repeat(hostile.junk) } : {},
  });
}

/** Bytes a published cell may take: a fixed part, a bounded part per reason and per member. */
function outputBound(members: number): number {
  const perReason = 2 * MAX_LISTED_PER_REASON * (MAX_POD_TEXT_LENGTH + 32) + 1_024;
  return 4_096 + 8 * perReason + members * (2 * MAX_POD_TEXT_LENGTH + 512);
}

describe('cell state under hostile labels and annotations (property)', () => {
  it('derives every cell in time, memory and output bounded by its members, whatever the numbers say', () => {
    fc.assert(
      fc.property(fc.array(hostilePod, { minLength: 1, maxLength: 40 }), (hostile) => {
        const store = new ObjectStore(cellKeyMap(LWS_LABELS));
        const pods = hostile.map(toPod);
        const heapBefore = process.memoryUsage().heapUsed;
        const started = performance.now();
        store.apply({ type: 'replace', objects: new Map(pods.map((p) => [podKey(p), p])) });
        for (const key of store.parentKeys()) {
          const members = store.getByParent(key);
          const state = deriveCellState(key, members, {
            labels: LWS_LABELS,
            portName: 'http',
          });
          expect(state).toBeDefined();
          const text = JSON.stringify(state);
          expect(text.length).toBeLessThanOrEqual(outputBound(members.length));
          for (const reason of state?.whyNotAlive ?? []) {
            expect(reason.pods?.length ?? 0).toBeLessThanOrEqual(MAX_LISTED_PER_REASON);
            expect(reason.indices?.length ?? 0).toBeLessThanOrEqual(MAX_LISTED_PER_REASON);
            expect(reason.message.length).toBeLessThanOrEqual(
              MAX_LISTED_PER_REASON * (MAX_POD_TEXT_LENGTH + 32) + 256,
            );
          }
          if (state?.size !== null) expect(state?.size).toBeLessThanOrEqual(MAX_CELL_SIZE);
        }
        // 40 pods: milliseconds of work (seconds allowed on a loaded machine); listing 999,999,999
        // indices took seconds and then the process.
        expect(performance.now() - started).toBeLessThan(2_000);
        // The store holds the pods; what deriving adds is bounded by their number, not the size
        // (listing 999,999,999 missing indices needed gigabytes).
        expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
      }),
      { numRuns: 300 },
    );
  });

  it('derives a cell of thousands of hostile pods with the output of its reasons still bounded', () => {
    const pods = Array.from({ length: 5_000 }, (_, i) =>
      lwsPod({
        name: `junk-${i}`,
        group: 0,
        worker: i % 2 === 0 ? 2 * i : 999_999_999 - i,
        size: MAX_CELL_SIZE,
        ready: i % 3 === 0,
        deleting: i % 5 === 0,
      }),
    );
    const store = new ObjectStore(cellKeyMap(LWS_LABELS));
    store.apply({ type: 'replace', objects: new Map(pods.map((p) => [podKey(p), p])) });
    const key = parentKeyOf('ns', 'engine-00000');
    const started = performance.now();
    const state = deriveCellState(key, store.getByParent(key), {
      labels: LWS_LABELS,
      portName: 'http',
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    const reasons = JSON.stringify(state?.whyNotAlive);
    expect(reasons.length).toBeLessThan(8 * 1024);
    expect(state?.whyNotAlive.map((r) => r.reason)).toEqual([
      'PodsNotReady',
      'PodsDeleting',
      'IndicesMissing',
      'IndicesUnexpected',
    ]);
  });
});
