import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PodStringInterner } from '../../src/kubernetes/reflector-worker/pod-string-interner.js';
import type { Pod } from '../../src/model/pod.js';
import { lwsPod } from '../support/lws-pod.js';
import { startNodeChild } from '../support/running-child.js';
import { settledHeapUsed } from '../support/settled-heap.js';

/** The interner's source, run by a child Node with its types stripped. */
const INTERNER_SOURCE = fileURLToPath(
  new URL('../../src/kubernetes/reflector-worker/pod-string-interner.ts', import.meta.url),
);

/**
 * Interns the pods given on stdin (a JSON array of pod texts), parsed in chunks of 250 as the
 * main thread parses the hop's, in a child Node that prints V8's deoptimizations.
 */
const DEOPT_PROBE = `
import { PodStringInterner } from ${JSON.stringify(INTERNER_SOURCE)};
let input = '';
for await (const chunk of process.stdin) input += chunk;
const texts = JSON.parse(input);
const interner = new PodStringInterner();
for (let at = 0; at < texts.length; at += 250) {
  for (const pod of JSON.parse('[' + texts.slice(at, at + 250).join(',') + ']')) interner.internPod(pod);
}
`;

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

  it('runs a long sync without V8 deoptimizing its code again and again', async () => {
    // The labels and annotations the LWS and StatefulSet controllers put on a group's pods (long
    // values under many keys, one the pod's own name; the leader without `leader-name`), in the
    // API server's order (sorted by key, as protobuf maps are written).
    const texts = Array.from({ length: 4_000 }, (_, i) => {
      const group = Math.floor(i / 4);
      const pod = worker(group, i % 4);
      pod.metadata.labels = Object.fromEntries(
        Object.entries({
          ...pod.metadata.labels,
          'apps.kubernetes.io/pod-index': String(i % 4),
          'controller-revision-hash': `engine-pool-with-a-long-name-${group}-f1f0e1fe3b`,
          'leaderworkerset.sigs.k8s.io/group-key': `${String(group).padStart(8, '0')}${'c'.repeat(32)}`,
          'statefulset.kubernetes.io/pod-name': pod.metadata.name,
        }).sort(([a], [b]) => (a < b ? -1 : 1)),
      );
      pod.metadata.annotations = {
        ...(i % 4 === 0 ? {} : pod.metadata.annotations),
        'leaderworkerset.sigs.k8s.io/size': '4',
      };
      return JSON.stringify(pod);
    });
    const probe = startNodeChild(
      ['--trace-deopt', '--input-type=module', '-e', DEOPT_PROBE],
      undefined,
      'pipe',
    );
    probe.child.stdin?.end(JSON.stringify(texts));
    expect(await probe.exited, probe.stderr()).toBe(0);
    const deoptimized = probe
      .stdout()
      .split('\n')
      .filter(
        (line) => line.includes('bailout') && /JSFunction (internPod|shareValues)\b/.test(line),
      );
    // A deoptimization or two while V8 learns the maps is normal; a loop of them is not (the
    // for…in version went through 25–45 in 10,000 pods, each a recompilation).
    expect(deoptimized.length, deoptimized.join('\n')).toBeLessThanOrEqual(3);
  });
});
