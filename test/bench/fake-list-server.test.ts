import { get, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ENGINE_NAMESPACE } from '../../bench/engine-pod.js';
import { FakeListServer, WRITTEN_AT_ANNOTATION } from '../../bench/fake-list-server.js';

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

describe('FakeListServer.burst (bench:sync’s event-latency burst)', () => {
  let server: FakeListServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('stamps each event with its write time, unless the burst is an unmeasured warm-up', async () => {
    server = await FakeListServer.start({ pods: 4 });
    const watch = await openWatch(server);
    // The WATCH is registered once its headers came back.
    expect(server.burst(3, { stamped: false })).toBe(1);
    const warmUp = await watch.next(3);
    expect(warmUp.map((line) => line.object.metadata.annotations?.[WRITTEN_AT_ANNOTATION])).toEqual(
      [undefined, undefined, undefined],
    );

    const before = performance.timeOrigin + performance.now();
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
