import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ApiConnectionError } from '../../src/kubernetes/client/api-errors.js';
import { protobufWatchFramer } from '../../src/kubernetes/codec/protobuf-watch-splitter.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import type { WatchFrame, WatchFramer } from '../../src/kubernetes/codec/watch-framing.js';
import { jsonWatchFramer } from '../../src/kubernetes/codec/watch-line-splitter.js';
import {
  HttpWatchStream,
  MAX_UNREAD_BYTES,
} from '../../src/kubernetes/resources/http-watch-stream.js';
import { encodeWatchFrame } from '../support/protobuf-writer.js';
import { until } from '../support/until.js';

const pod = (name: string, resourceVersion: string) => ({
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: { name, namespace: 'pools', uid: `uid-${name}`, resourceVersion },
  spec: { containers: [{ name: 'engine' }] },
  status: { phase: 'Running' },
});

/** A WATCH whose body the test writes, as the pod API hands one to the stream. */
function openWatch(framer: WatchFramer, signal = new AbortController().signal) {
  const body = new PassThrough();
  const request = new PassThrough();
  const heard: number[] = [];
  const stream = new HttpWatchStream(
    {
      status: 200,
      header: () => undefined,
      body,
      close: () => {
        body.destroy();
        request.destroy();
      },
      truncation: () => undefined,
    },
    body,
    signal,
    (count) => heard.push(count),
    framer,
  );
  return { body, request, stream, heard };
}

/** Writes more frames than may wait unread, and waits until the stream paused the body; how many. */
async function writeUntilPaused(body: PassThrough): Promise<number> {
  const line = `${JSON.stringify({ type: 'ADDED', object: { pad: 'x'.repeat(64 * 1024) } })}\n`;
  const lines = Math.ceil(MAX_UNREAD_BYTES / line.length) + 8;
  for (let index = 0; index < lines; index += 1) body.write(line);
  await until(() => body.isPaused(), { what: 'the body paused' });
  return lines;
}

async function take(iterator: AsyncIterator<WatchFrame>, count: number): Promise<WatchFrame[]> {
  const frames: WatchFrame[] = [];
  for (let index = 0; index < count; index += 1) {
    const next = await iterator.next();
    if (next.done) break;
    frames.push(next.value);
  }
  return frames;
}

describe('HttpWatchStream', () => {
  it('hands out the frames each chunk completes, in order, however the chunks cut them', async () => {
    const { body, stream, heard } = openWatch(protobufWatchFramer());
    const iterator = stream[Symbol.asyncIterator]();
    const bytes = Buffer.concat([
      encodeWatchFrame({ type: 'ADDED', object: pod('a', '1') }),
      encodeWatchFrame({ type: 'ADDED', object: pod('b', '2') }),
      encodeWatchFrame({ type: 'MODIFIED', object: pod('a', '3') }),
    ]);
    // Cut inside the first length prefix, inside the second frame, and between the last two.
    body.write(bytes.subarray(0, 2));
    body.write(bytes.subarray(2, 40));
    body.end(bytes.subarray(40));
    const frames = await take(iterator, 4);
    const read = frames.map((frame) => readFrame(frame));
    expect(read.map((reading) => reading.kind === 'change' && reading.event.type)).toEqual([
      'upsert',
      'upsert',
      'upsert',
    ]);
    expect(
      read.map((reading) => (reading.kind === 'change' ? reading.resourceVersion : '')),
    ).toEqual(['1', '2', '3']);
    expect(heard.reduce((sum, count) => sum + count, 0)).toBe(bytes.length);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it('pauses the body while more than its bound waits unread, and resumes once all is taken', async () => {
    const { body, stream } = openWatch(jsonWatchFramer());
    const iterator = stream[Symbol.asyncIterator]();
    const lines = await writeUntilPaused(body);
    // Nothing was taken: every frame read so far is waiting, and the rest stays in the body.
    expect(body.readableLength).toBeGreaterThan(0);
    const frames = await take(iterator, lines);
    expect(frames).toHaveLength(lines);
    expect(body.isPaused()).toBe(false);
  });

  it('hands out the frames already read without waiting, in order with next(), and none beyond', async () => {
    const { body, stream } = openWatch(jsonWatchFramer());
    const iterator = stream[Symbol.asyncIterator]();
    expect(stream.takeReady()).toBeUndefined();
    body.write('{"type":"ADDED","object":{"n":1}}\n{"type":"ADDED","object":{"n":2}}\n');
    body.write('{"type":"ADDED","object":{"n":3}}\n');
    const [first] = await take(iterator, 1);
    expect(first).toEqual({ kind: 'decoded', value: { type: 'ADDED', object: { n: 1 } } });
    expect(stream.takeReady()).toEqual({
      kind: 'decoded',
      value: { type: 'ADDED', object: { n: 2 } },
    });
    expect(stream.takeReady()).toEqual({
      kind: 'decoded',
      value: { type: 'ADDED', object: { n: 3 } },
    });
    expect(stream.takeReady()).toBeUndefined();
    body.end('{"type":"ADDED","object":{"n":4}}\n');
    expect(await take(iterator, 2)).toEqual([
      { kind: 'decoded', value: { type: 'ADDED', object: { n: 4 } } },
    ]);
    // Ended: nothing more to take, and `next()` says how it ended.
    expect(stream.takeReady()).toBeUndefined();
  });

  it('resumes a paused body once takeReady has taken every waiting frame', async () => {
    const { body, stream } = openWatch(jsonWatchFramer());
    const iterator = stream[Symbol.asyncIterator]();
    const lines = await writeUntilPaused(body);
    let taken = (await take(iterator, 1)).length;
    while (stream.takeReady() !== undefined) taken += 1;
    expect(body.isPaused()).toBe(false);
    expect(taken + (await take(iterator, lines - taken)).length).toBe(lines);
  });

  it('fails a body that ends inside a frame, after the frames before it', async () => {
    const { body, stream } = openWatch(jsonWatchFramer());
    const iterator = stream[Symbol.asyncIterator]();
    body.end('{"type":"ADDED","object":{"n":1}}\n{"type":"ADD');
    expect(await take(iterator, 1)).toEqual([
      { kind: 'decoded', value: { type: 'ADDED', object: { n: 1 } } },
    ]);
    await expect(iterator.next()).rejects.toBeInstanceOf(ApiConnectionError);
  });

  it('fails the read with the signal’s reason when aborted while a reader waits', async () => {
    const controller = new AbortController();
    const { body, request, stream } = openWatch(jsonWatchFramer(), controller.signal);
    const iterator = stream[Symbol.asyncIterator]();
    const waiting = iterator.next();
    const reason = new Error('stopped');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(body.destroyed).toBe(true);
    expect(request.destroyed).toBe(true);
  });

  it('fails the stream, not the thread, when decoding a frame throws', async () => {
    const broken: WatchFramer = {
      push: () => {
        throw new Error('decoder bug');
      },
      end: () => undefined,
    };
    const { body, stream } = openWatch(broken);
    const iterator = stream[Symbol.asyncIterator]();
    body.write('anything');
    const failure = await iterator.next().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApiConnectionError);
    expect(String((failure as Error).cause ?? failure)).toMatch(/decoder bug/);
    expect(body.destroyed).toBe(true);
  });
});
