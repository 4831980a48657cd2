import { describe, expect, it } from 'vitest';
import { PodStringInterner } from '../../src/kubernetes/reflector-worker/pod-string-interner.js';
import type { Pod } from '../../src/model/pod.js';
import { lwsPod } from '../support/lws-pod.js';
import { settledHeapUsed } from '../support/settled-heap.js';

/** A pod as the main thread receives it: parsed from the hop's JSON, every string a fresh copy. */
function parsed(pod: Pod): Pod {
  return JSON.parse(JSON.stringify(pod)) as Pod;
}

/** An LWS worker with the long strings that repeat across a group and a cluster. */
function worker(group: number, index: number): Pod {
  return lwsPod({
    pool: 'engine-pool-with-a-long-name',
    group,
    worker: index,
    namespace: 'inference-serving',
    node: `gpu-node-${String(group % 7).padStart(4, '0')}`,
    revision: '5d8f7b9c4f6a',
    created: '2026-11-02T08:00:10Z',
    owner: { uid: `0b1c2d3e-0000-4000-8000-${String(group).padStart(12, '0')}` },
    annotations: {
      'leaderworkerset.sigs.k8s.io/leader-name': `engine-pool-with-a-long-name-${group}`,
    },
    conditions: [
      {
        type: 'PodReadyToStartContainers',
        status: 'True',
        lastTransitionTime: '2026-11-02T08:00:22Z',
      },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-02T08:00:10Z' },
    ],
  });
}

describe('PodStringInterner', () => {
  it('leaves every value of every pod as it was, whatever the pod before it', () => {
    const interner = new PodStringInterner();
    const pods = [
      worker(0, 0),
      worker(0, 1),
      lwsPod({ name: 'a-pod-without-an-owner-or-gates', conditions: [] }),
      worker(1, 0),
      lwsPod({ group: 1, worker: 2, readinessGates: ['example.com/warm'], owner: { uid: 'x' } }),
      worker(2, 3),
    ];
    for (const original of pods) {
      expect(interner.internPod(parsed(original))).toEqual(original);
    }
  });

  it('changes no value in a long run of pods that differ from their neighbours in every way', () => {
    // A fixed-seed generator: each pod takes or drops each optional part at random, so every
    // field meets a neighbour that lacks it, has more or fewer of it, or has it equal.
    let seed = 42;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const pick = <T>(values: readonly T[]): T => values[next(values.length)] as T;
    const interner = new PodStringInterner();
    for (let i = 0; i < 500; i += 1) {
      const original = lwsPod({
        pool: pick(['engine', 'engine-pool-with-a-long-name']),
        group: next(3),
        worker: pick([0, 1, 2, null]),
        namespace: pick(['ns', 'inference-serving']),
        node: pick(['node-a', 'gpu-node-0000001']),
        ...(next(2) ? { revision: pick(['5d8f7b9c4f6a', 'ffffffffffff']) } : {}),
        ...(next(2) ? { created: pick(['2026-11-02T08:00:10Z', '2026-11-02T08:00:11Z']) } : {}),
        ...(next(2)
          ? { owner: { uid: pick(['uid-of-the-first-owner', 'uid-of-another-owner']) } }
          : {}),
        ...(next(2) ? { readinessGates: ['example.com/warm-and-ready'] } : {}),
        annotations: next(2) ? { 'example.com/leader': pick(['engine-pool-leader', 'x']) } : {},
        conditions: Array.from({ length: next(4) }, () => ({
          type: pick(['PodReadyToStartContainers', 'PodScheduled', 'example.com/warm-and-ready']),
          status: pick(['True', 'False']),
          ...(next(2)
            ? { lastTransitionTime: pick(['2026-11-02T08:00:22Z', '2026-11-02T08:00:23Z']) }
            : {}),
        })),
      });
      expect(interner.internPod(parsed(original))).toEqual(original);
    }
  });

  it('frees what neighbouring pods repeat: 20,000 pods in groups of 4 take 300 bytes each less', () => {
    const texts = Array.from({ length: 20_000 }, (_, i) =>
      JSON.stringify(worker(Math.floor(i / 4), i % 4)),
    );
    const heldFor = (intern: boolean): number => {
      const interner = new PodStringInterner();
      const before = settledHeapUsed();
      const pods = texts.map((text) => {
        const pod = JSON.parse(text) as Pod;
        return intern ? interner.internPod(pod) : pod;
      });
      const held = settledHeapUsed() - before;
      expect(pods).toHaveLength(texts.length);
      return held;
    };
    const plain = heldFor(false);
    const interned = heldFor(true);
    expect((plain - interned) / texts.length).toBeGreaterThan(300);
  });
});
