import { get, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ENGINE_NAMESPACE } from '../../bench/engine-pod.js';
import { FakeListServer, unixNowMs, WRITTEN_AT_ANNOTATION } from '../../bench/fake-list-server.js';

interface WatchLine {
  type: string;
  object: { metadata: { name: string; annotations?: Record<string, string> } };
}

/** Opens a WATCH and collects its lines; `next(n)` resolves once n MODIFIED lines arrived. */
async function openWatch(server: FakeListServer): Promise<{
  next: (count: number) => Promise<WatchLine[]>;
  close: () => void;
}> {
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    get(`${server.url}/api/v1/namespaces/${ENGINE_NAMESPACE}/pods?watch=true`, resolve).on(
      'error',
      reject,
    );
  });
  const lines: WatchLine[] = [];
  let text = '';
  let waiter: (() => void) | undefined;
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => {
    text += chunk;
    let newline = text.indexOf('\n');
    while (newline !== -1) {
      const line = JSON.parse(text.slice(0, newline)) as WatchLine;
      if (line.type === 'MODIFIED') lines.push(line);
      text = text.slice(newline + 1);
      newline = text.indexOf('\n');
    }
    waiter?.();
  });
  let taken = 0;
  return {
    next: (count) =>
      new Promise((resolve) => {
        const check = (): void => {
          if (lines.length - taken < count) return;
          waiter = undefined;
          resolve(lines.slice(taken, taken + count));
          taken += count;
        };
        waiter = check;
        check();
      }),
    close: () => response.destroy(),
  };
}

/** The WATCH's status and whole body until `end` says it has what it needs. */
async function readWatch(
  server: FakeListServer,
  query: string,
  end: (body: string) => boolean,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(`${server.url}/api/v1/namespaces/${ENGINE_NAMESPACE}/pods?${query}`, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
        if (end(body)) {
          response.destroy();
          resolve({ status: response.statusCode ?? 0, body });
        }
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** Each test's server, closed after it. */
let server: FakeListServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('FakeListServer watch-list (bench:sync --watch-list)', () => {
  it('refuses sendInitialEvents by default, so every client lists', async () => {
    server = await FakeListServer.start({ pods: 2 });
    const answer = await readWatch(server, 'watch=true&sendInitialEvents=true', () => false);
    expect(answer.status).toBe(400);
    expect(server.takeCounts().watchListsRefused).toBe(1);
  });

  it('serves an ADDED event per pod, then the bookmark that ends the initial events', async () => {
    server = await FakeListServer.start({ pods: 3, watchList: true });
    const answer = await readWatch(server, 'watch=true&sendInitialEvents=true', (body) =>
      body.includes('initial-events-end'),
    );
    expect(answer.status).toBe(200);
    const lines = answer.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as WatchLine);
    expect(lines.map((line) => line.type)).toEqual(['ADDED', 'ADDED', 'ADDED', 'BOOKMARK']);
    expect(lines[3]?.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    expect(server.takeCounts()).toMatchObject({ lists: 1, watches: 1, watchListsRefused: 0 });
  });
});

describe('FakeListServer.burst (bench:sync’s event-latency burst)', () => {
  it('stamps each event with its write time, unless the burst is an unmeasured warm-up', async () => {
    server = await FakeListServer.start({ pods: 4 });
    const watch = await openWatch(server);
    // The WATCH is registered once its headers came back.
    expect(server.burst(3, { stamped: false })).toBe(1);
    const warmUp = await watch.next(3);
    expect(warmUp.map((line) => line.object.metadata.annotations?.[WRITTEN_AT_ANNOTATION])).toEqual(
      [undefined, undefined, undefined],
    );

    const before = unixNowMs();
    server.burst(2);
    const measured = await watch.next(2);
    for (const line of measured) {
      const stamp = Number(line.object.metadata.annotations?.[WRITTEN_AT_ANNOTATION]);
      expect(stamp).toBeGreaterThanOrEqual(before);
    }
    expect(server.lastBurstWriteMs).toBeGreaterThanOrEqual(0);
    watch.close();
  });

  it('knows no write loop before its first burst', async () => {
    server = await FakeListServer.start({ pods: 1 });
    expect(server.lastBurstWriteMs).toBeUndefined();
  });
});
