import { describe, expect, it } from 'vitest';
import {
  MAX_CONDITION_MESSAGE_LENGTH,
  MAX_DESIRED_CELLS,
  MalformedWorkloadError,
  parseLeaderWorkerSet,
} from '../../src/model/workload.js';

function lws(spec: unknown, status: unknown = {}): unknown {
  return { metadata: { namespace: 'ns', name: 'engine' }, spec, status };
}

describe('parseLeaderWorkerSet', () => {
  it('reads replicas, the ready count and the conditions, nothing else', () => {
    expect(
      parseLeaderWorkerSet(
        lws(
          { replicas: 4, leaderWorkerTemplate: { size: 2 } },
          {
            readyReplicas: 3,
            conditions: [
              {
                type: 'Available',
                status: 'True',
                reason: 'AllGroupsReady',
                message: 'All replicas are ready',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
              { type: 'Progressing' },
            ],
          },
        ),
      ),
    ).toEqual({
      namespace: 'ns',
      name: 'engine',
      uid: null,
      desiredCells: 4,
      readyReplicas: 3,
      conditions: [
        {
          type: 'Available',
          status: 'True',
          reason: 'AllGroupsReady',
          message: 'All replicas are ready',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    });
  });

  it('takes an absent replicas as the CRD default, 1, and an absent status as unknown', () => {
    expect(parseLeaderWorkerSet({ metadata: { namespace: 'ns', name: 'x' } })).toMatchObject({
      desiredCells: 1,
      readyReplicas: null,
      conditions: [],
    });
  });

  it.each([
    [lws({ replicas: -1 }), /spec.replicas is not a non-negative integer/],
    [lws({ replicas: 1.5 }), /spec.replicas is not a non-negative integer/],
    [lws({ replicas: '3' }), /spec.replicas is not a non-negative integer/],
    [lws({ replicas: MAX_DESIRED_CELLS + 1 }), /more than the 100000 cells a pool may have/],
    [lws({}, { readyReplicas: -2 }), /status.readyReplicas/],
    [{ metadata: { name: 'x' } }, /metadata.name or metadata.namespace missing/],
    [null, /no metadata/],
  ])('refuses what cannot be a LWS, naming the field (%#)', (value, message) => {
    expect(() => parseLeaderWorkerSet(value)).toThrow(MalformedWorkloadError);
    expect(() => parseLeaderWorkerSet(value)).toThrow(message);
  });

  it('cuts a long condition message, so a status page line stays a line', () => {
    const long = 'x'.repeat(MAX_CONDITION_MESSAGE_LENGTH * 4);
    const [condition] = parseLeaderWorkerSet(
      lws({}, { conditions: [{ type: 'Available', status: 'False', message: long }] }),
    ).conditions;
    expect(condition!.message).toHaveLength(MAX_CONDITION_MESSAGE_LENGTH + 1);
  });
});
