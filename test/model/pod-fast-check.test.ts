import { describe, expect, it } from 'vitest';
import { MalformedPodError, parsePod, podWireSchema } from '../../src/model/pod.js';

type Json = Record<string, unknown>;

/** A pod with every field the schema knows, each in a form it accepts. */
function richPod(): Json {
  return {
    metadata: {
      name: 'p',
      namespace: 'ns',
      uid: 'u',
      resourceVersion: '7',
      creationTimestamp: '2026-01-01T00:00:00Z',
      deletionTimestamp: null,
      labels: { a: 'b' },
      annotations: { c: 'd' },
      ownerReferences: [{ kind: 'StatefulSet', name: 's', uid: 'u', controller: true }],
    },
    spec: {
      nodeName: 'n',
      subdomain: null,
      nodeSelector: { zone: 'z' },
      schedulingGates: [{ name: 'g' }],
      readinessGates: [{ conditionType: 'r' }],
      containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }] }],
    },
    status: {
      phase: 'Running',
      podIP: '10.0.0.1',
      conditions: [
        { type: 'Ready', status: 'True', reason: null, message: 'm', lastTransitionTime: 't' },
      ],
      containerStatuses: [
        {
          name: 'c',
          ready: true,
          restartCount: 1,
          state: { waiting: { reason: 'w', message: null }, running: { startedAt: 's' } },
          lastState: {
            terminated: { exitCode: 1, reason: 'r', message: 'm', startedAt: 's', finishedAt: 'f' },
          },
        },
      ],
    },
  };
}

/** Every path to a leaf or a branch of `value`. */
function paths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== 'object' || value === null) return [prefix];
  const out: Array<Array<string | number>> = prefix.length > 0 ? [prefix] : [];
  for (const [key, child] of Object.entries(value)) {
    out.push(...paths(child, [...prefix, Array.isArray(value) ? Number(key) : key]));
  }
  return out;
}

function replaced(path: Array<string | number>, by: unknown): Json {
  const pod = richPod();
  let at: Record<string | number, unknown> = pod;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path.at(-1) as string | number] = by;
  return pod;
}

const ODD_VALUES: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1.5,
  2 ** 60,
  Number.NaN,
  '',
  'text',
  true,
  [],
  [1],
  {},
  { name: 'x' },
];

describe('parsePod: the fast check and the schema agree on what a pod is', () => {
  it('accepts exactly what the schema accepts, whatever any field is replaced by', () => {
    let compared = 0;
    for (const path of paths(richPod())) {
      for (const odd of ODD_VALUES) {
        const value = replaced(path, odd);
        const valid = podWireSchema.safeParse(structuredClone(value)).success;
        const where = `${path.join('.')} = ${JSON.stringify(odd)}`;
        if (valid) expect(() => parsePod(value), where).not.toThrow();
        else expect(() => parsePod(value), where).toThrow(MalformedPodError);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('gives the same pod for a value the fast check takes and for one only zod takes', () => {
    const plain = parsePod(richPod());
    // A map with a `__proto__` key is left to zod (its copy drops it); the rest reads the same.
    const odd = richPod();
    Object.defineProperty(odd.metadata as Json, 'labels', {
      value: JSON.parse('{"a":"b","__proto__":"x"}'),
      enumerable: true,
    });
    const viaSchema = parsePod(odd);
    expect(viaSchema).toStrictEqual(plain);
    expect(JSON.stringify(viaSchema)).toBe(JSON.stringify(plain));
  });

  it("keeps no reference to the caller's maps: changing them later changes no pod", () => {
    const value = richPod();
    const pod = parsePod(value);
    const metadata = value.metadata as Json;
    (metadata.labels as Json).a = 'changed';
    (metadata.annotations as Json).c = 'changed';
    ((value.spec as Json).nodeSelector as Json).zone = 'changed';
    expect(pod.metadata.labels).toEqual({ a: 'b' });
    expect(pod.metadata.annotations).toEqual({ c: 'd' });
    expect(pod.spec.nodeSelector).toEqual({ zone: 'z' });
  });
});
