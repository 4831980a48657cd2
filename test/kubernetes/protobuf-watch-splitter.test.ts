import { describe, expect, it } from 'vitest';
import { protobufWatchFramer } from '../../src/kubernetes/codec/protobuf-watch-splitter.js';
import { readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import {
  splitWatchFrames,
  TruncatedFrameError,
  type WatchFrame,
} from '../../src/kubernetes/codec/watch-framing.js';
import {
  concatBytes,
  encodeWatchEvent,
  encodeWatchFrame,
  k8sEnvelope,
  lengthPrefixed,
  message,
} from '../support/protobuf-writer.js';

const pod = (name: string, resourceVersion: string) => ({
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: { name, namespace: 'pools', uid: `uid-${name}`, resourceVersion },
  spec: { containers: [{ name: 'engine', ports: [{ containerPort: 30000 }] }] },
  status: { phase: 'Running', podIP: '10.0.0.1' },
});

const added = { type: 'ADDED', object: pod('a', '10') };
const bookmark = { type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: '11' } } };
const deleted = { type: 'DELETED', object: pod('b', '12') };

async function* chunks(...parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

async function decode(
  parts: Uint8Array[],
  maxFrameBytes?: number,
): Promise<{ frames: WatchFrame[]; bytes: number[] }> {
  const frames: WatchFrame[] = [];
  const bytes: number[] = [];
  for await (const frame of splitWatchFrames(
    protobufWatchFramer,
    chunks(...parts),
    (n) => bytes.push(n),
    maxFrameBytes,
  )) {
    frames.push(frame);
  }
  return { frames, bytes };
}

/** What the reflector makes of frames: decoded protobuf and JSON frames compare alike here. */
const readings = (frames: WatchFrame[]) => frames.map((frame) => readFrame(frame));
const jsonReadings = (...events: unknown[]) =>
  events.map((value) => readFrame({ kind: 'decoded', value }));

/** `bytes` cut at each offset in `cuts` into consecutive chunks. */
function cutAt(bytes: Uint8Array, ...cuts: number[]): Uint8Array[] {
  const bounds = [0, ...cuts, bytes.length];
  return bounds.slice(1).map((end, index) => bytes.subarray(bounds[index], end));
}

describe('the protobuf watch framer', () => {
  it('yields one decoded WatchEvent per length-prefixed frame, read as its JSON form is', async () => {
    const stream = concatBytes(encodeWatchFrame(added), encodeWatchFrame(bookmark));
    const { frames } = await decode([stream]);
    expect(frames.map((frame) => frame.kind)).toEqual(['decoded', 'decoded']);
    expect(readings(frames)).toEqual(jsonReadings(added, bookmark));
  });

  it('yields the same frames however the stream is cut in two, inside the prefix included', async () => {
    const stream = concatBytes(encodeWatchFrame(added), encodeWatchFrame(deleted));
    const expected = jsonReadings(added, deleted);
    for (let cut = 1; cut < stream.length; cut += 1) {
      const { frames, bytes } = await decode(cutAt(stream, cut));
      expect(readings(frames), `cut at ${cut}`).toEqual(expected);
      expect(bytes).toEqual([cut, stream.length - cut]);
    }
  });

  it('yields the same frames from a stream delivered one byte at a time', async () => {
    const stream = concatBytes(
      encodeWatchFrame(added),
      encodeWatchFrame(bookmark),
      encodeWatchFrame(deleted),
    );
    const singles = Array.from(stream, (_, index) => stream.subarray(index, index + 1));
    const { frames, bytes } = await decode(singles);
    expect(readings(frames)).toEqual(jsonReadings(added, bookmark, deleted));
    expect(bytes).toHaveLength(stream.length);
  });

  it('yields several frames from one chunk, and a frame completed by the next', async () => {
    const first = encodeWatchFrame(added);
    const second = encodeWatchFrame(bookmark);
    const third = encodeWatchFrame(deleted);
    const stream = concatBytes(first, second, third);
    const { frames } = await decode(cutAt(stream, first.length + second.length + 2));
    expect(readings(frames)).toEqual(jsonReadings(added, bookmark, deleted));
  });

  it('reads chunks that are views into a larger buffer, not Buffers', async () => {
    const frame = encodeWatchFrame(added);
    const backing = new Uint8Array(frame.length + 20);
    backing.set(frame, 7);
    const view = new Uint8Array(backing.buffer, 7, frame.length);
    const { frames } = await decode([view.subarray(0, 3), view.subarray(3)]);
    expect(readings(frames)).toEqual(jsonReadings(added));
  });

  it('reports every chunk of bytes, even ones that complete no frame', async () => {
    const frame = encodeWatchFrame(added);
    const { frames, bytes } = await decode(cutAt(frame, 2, 4, 9));
    expect(bytes).toEqual([2, 2, 5, frame.length - 9]);
    expect(frames).toHaveLength(1);
  });

  it('hears a chunk before the frame it belongs to is complete', async () => {
    const frame = encodeWatchFrame(added);
    const heard: number[] = [];
    async function* parts(): AsyncGenerator<Uint8Array> {
      yield frame.subarray(0, 10);
      // The first chunk is counted on arrival, not when its frame completes.
      expect(heard).toEqual([10]);
      yield frame.subarray(10);
    }
    const frames: WatchFrame[] = [];
    for await (const f of splitWatchFrames(protobufWatchFramer, parts(), (n) => heard.push(n)))
      frames.push(f);
    expect(frames).toHaveLength(1);
  });

  it('yields a frame that is not a WatchEvent as garbled, and reads on', async () => {
    const bad = lengthPrefixed(Uint8Array.from([0x0a, 0x09, 0x41])); // a string that runs past
    const badObject = lengthPrefixed(
      message((w) =>
        w.string(1, 'ADDED').message(2, (raw) => raw.bytes(1, [0x6b, 0x38, 0x73, 0x01])),
      ),
    );
    const { frames } = await decode([
      concatBytes(encodeWatchFrame(added), bad, badObject, encodeWatchFrame(deleted)),
    ]);
    expect(frames).toHaveLength(4);
    expect(frames[1]).toEqual({
      kind: 'garbled',
      error: expect.stringContaining('watch frame is not a protobuf WatchEvent'),
    });
    expect(frames[2]).toEqual({
      kind: 'garbled',
      error: expect.stringContaining('no k8s magic prefix'),
    });
    expect(readings([frames[0] as WatchFrame, frames[3] as WatchFrame])).toEqual(
      jsonReadings(added, deleted),
    );
    // The reflector reads a garbled frame as a malformed one (and relists).
    expect(readFrame(frames[1] as WatchFrame)).toMatchObject({
      kind: 'failure',
      failure: { kind: 'malformed-frame' },
    });
  });

  it('yields a frame whose pod has an impossible timestamp as garbled, not as an exception', async () => {
    const podBytes = message((p) =>
      p.message(1, (m) => m.string(1, 'p').message(9, (t) => t.varint(1, 2n ** 60n))),
    );
    const event = message((w) =>
      w
        .string(1, 'ADDED')
        .message(2, (raw) =>
          raw.bytes(1, k8sEnvelope({ apiVersion: 'v1', kind: 'Pod' }, podBytes)),
        ),
    );
    const { frames } = await decode([lengthPrefixed(event), encodeWatchFrame(deleted)]);
    expect(frames[0]?.kind).toBe('garbled');
    expect(readings(frames.slice(1))).toEqual(jsonReadings(deleted));
  });

  it('yields a zero-length frame as an empty WatchEvent, which readFrame reports as typeless', async () => {
    const { frames } = await decode([Uint8Array.from([0, 0, 0, 0])]);
    expect(frames).toEqual([{ kind: 'decoded', value: {} }]);
    expect(readFrame(frames[0] as WatchFrame)).toMatchObject({
      kind: 'failure',
      failure: { message: 'watch frame has no type' },
    });
  });

  it('reports a frame over the limit as garbled once its length is read, and skips its bytes', async () => {
    const big = encodeWatchFrame({ type: 'ADDED', object: pod('x'.repeat(200), '13') });
    const small = encodeWatchFrame(bookmark);
    const limit = small.length; // the bookmark fits exactly; the big frame does not
    const pulled: number[] = [];
    const seen: WatchFrame[] = [];
    async function* parts(): AsyncGenerator<Uint8Array> {
      pulled.push(1);
      yield big.subarray(0, 6); // the length prefix and two bytes of the frame
      pulled.push(2);
      yield big.subarray(6, 100);
      pulled.push(3);
      // The end of the big frame and the whole next frame, in one chunk.
      yield concatBytes(big.subarray(100), small);
    }
    for await (const frame of splitWatchFrames(protobufWatchFramer, parts(), undefined, limit)) {
      // Reported before the rest of the big frame was asked for.
      if (seen.length === 0) expect(pulled).toEqual([1]);
      seen.push(frame);
    }
    expect(seen[0]).toEqual({
      kind: 'garbled',
      error: `watch frame larger than ${limit} bytes`,
    });
    expect(readings(seen.slice(1))).toEqual(jsonReadings(bookmark));
  });

  it('reports a frame over the limit that arrives in one chunk, and reads the frames after it', async () => {
    const big = encodeWatchFrame({ type: 'ADDED', object: pod('y'.repeat(300), '14') });
    const { frames } = await decode(
      [concatBytes(encodeWatchFrame(added), big, encodeWatchFrame(deleted))],
      200,
    );
    expect(frames).toHaveLength(3);
    expect(frames[1]).toEqual({ kind: 'garbled', error: 'watch frame larger than 200 bytes' });
    expect(readings([frames[0] as WatchFrame, frames[2] as WatchFrame])).toEqual(
      jsonReadings(added, deleted),
    );
  });

  it('takes a declared length of 4 GiB for an oversize frame, not a frame to wait for', async () => {
    const frames: WatchFrame[] = [];
    const error = await (async () => {
      for await (const frame of splitWatchFrames(
        protobufWatchFramer,
        chunks(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3])),
      )) {
        frames.push(frame);
      }
    })().catch((e: unknown) => e);
    expect(frames).toEqual([
      { kind: 'garbled', error: `watch frame larger than ${16 * 1024 * 1024} bytes` },
    ]);
    expect(error).toBeInstanceOf(TruncatedFrameError);
  });

  it('throws when the stream ends inside a frame: a dropped connection, not a clean end', async () => {
    const stream = concatBytes(encodeWatchFrame(added), encodeWatchFrame(deleted));
    const second = encodeWatchFrame(added).length;
    for (const cut of [second + 4, second + 5, stream.length - 1]) {
      await expect(decode([stream.subarray(0, cut)]), `cut at ${cut}`).rejects.toBeInstanceOf(
        TruncatedFrameError,
      );
    }
  });

  it('throws when the stream ends inside a length prefix', async () => {
    const first = encodeWatchFrame(added);
    for (const extra of [1, 2, 3]) {
      const stream = concatBytes(first, Uint8Array.from([0, 0, 0, 9]).subarray(0, extra));
      await expect(decode([stream])).rejects.toBeInstanceOf(TruncatedFrameError);
    }
  });

  it('throws when the stream ends inside a frame that was too large, after reporting it', async () => {
    const big = encodeWatchFrame({ type: 'ADDED', object: pod('z'.repeat(300), '15') });
    const frames: WatchFrame[] = [];
    await expect(
      (async () => {
        for await (const frame of splitWatchFrames(
          protobufWatchFramer,
          chunks(big.subarray(0, 150)),
          undefined,
          64,
        )) {
          frames.push(frame);
        }
      })(),
    ).rejects.toBeInstanceOf(TruncatedFrameError);
    expect(frames).toEqual([{ kind: 'garbled', error: 'watch frame larger than 64 bytes' }]);
  });

  it('ends cleanly after a whole frame, and on an empty stream', async () => {
    const { frames } = await decode([encodeWatchFrame(added)]);
    expect(frames).toHaveLength(1);
    expect((await decode([])).frames).toEqual([]);
    expect((await decode([new Uint8Array()])).frames).toEqual([]);
    const exact = encodeWatchFrame(bookmark);
    expect((await decode([exact], exact.length - 4)).frames[0]?.kind).toBe('decoded');
  });

  it('decodes the frame body alone, without the "k8s\\0" envelope a WatchEvent does not have', async () => {
    const event = encodeWatchEvent(added);
    expect(Array.from(event.subarray(0, 2))).toEqual([0x0a, 'ADDED'.length]);
    const { frames } = await decode([lengthPrefixed(event)]);
    expect(frames[0]?.kind).toBe('decoded');
  });
});
