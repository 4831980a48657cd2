import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

describe('GET /api/v1/reflector', () => {
  it("shows the source's stats with nulls for what it does not know yet", async () => {
    const { app } = await harness();
    const res = await app.inject({ url: '/api/v1/reflector' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      source: 'kubernetes',
      phase: 'watching',
      healthy: true,
      cursor: '100',
      lists: 1,
      relists: {},
      watchOpens: 1,
      initialList: 'watch-list',
      watchListFallbacks: 0,
      initialEventsTimeouts: 0,
      stalledWatches: 0,
      events: {},
      droppedEvents: {},
      lastEventAt: null,
      lastSyncAt: null,
      bytesDecoded: 0,
      lastError: null,
      listProgress: null,
    });
  });

  it('shows relists by reason, events by type and the last error', async () => {
    const { app, podSource } = await harness();
    podSource.current = {
      phase: 'backoff',
      healthy: false,
      lists: 3,
      relists: { expired: 2 },
      watchOpens: 4,
      initialList: 'list',
      watchListFallbacks: 1,
      initialEventsTimeouts: 1,
      stalledWatches: 2,
      events: { ADDED: 5, BOOKMARK: 1 },
      droppedEvents: { stale: 3 },
      lastEventAtMs: 1_700_000_000_000,
      lastSyncAtMs: 1_699_999_999_000,
      bytesDecoded: 12_345,
      lastError: 'watch closed: 410 Gone',
      listProgress: { pages: 7, pods: 3_500, startedAtMs: 1_700_000_000_500 },
    };
    expect((await app.inject({ url: '/api/v1/reflector' })).json()).toEqual({
      source: 'kubernetes',
      phase: 'backoff',
      healthy: false,
      cursor: null,
      lists: 3,
      relists: { expired: 2 },
      watchOpens: 4,
      initialList: 'list',
      watchListFallbacks: 1,
      initialEventsTimeouts: 1,
      stalledWatches: 2,
      events: { ADDED: 5, BOOKMARK: 1 },
      droppedEvents: { stale: 3 },
      lastEventAt: '2023-11-14T22:13:20.000Z',
      lastSyncAt: '2023-11-14T22:13:19.000Z',
      bytesDecoded: 12_345,
      lastError: 'watch closed: 410 Gone',
      listProgress: { pages: 7, pods: 3_500, startedAt: '2023-11-14T22:13:20.500Z' },
    });
  });
});
