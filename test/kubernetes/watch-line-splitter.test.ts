import { describe, expect, it } from 'vitest';
import {
  splitWatchFrames,
  TruncatedFrameError,
  type WatchFrame,
} from '../../src/kubernetes/codec/watch-framing.js';
import { jsonWatchFramer } from '../../src/kubernetes/codec/watch-line-splitter.js';

async function* chunks(...parts: Array<string | Buffer>): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.isBuffer(part) ? part : Buffer.from(part, 'utf8');
}

async function decode(
  ...parts: Array<string | Buffer>
): Promise<{ frames: WatchFrame[]; bytes: number[] }> {
  const frames: WatchFrame[] = [];
  const bytes: number[] = [];
  for await (const frame of splitWatchFrames(jsonWatchFramer, chunks(...parts), (n) =>
    bytes.push(n),
  ))
    frames.push(frame);
  return { frames, bytes };
}

describe('the JSON watch framer', () => {
  it('yields one frame per line, across chunk boundaries', async () => {
    const { frames } = await decode(
      '{"type":"ADDED","object":{"a"',
      ':1}}\n{"type":"BOOK',
      'MARK"}\n',
    );
    expect(frames).toEqual([
      { kind: 'decoded', value: { type: 'ADDED', object: { a: 1 } } },
      { kind: 'decoded', value: { type: 'BOOKMARK' } },
    ]);
  });

  it('decodes a multi-byte character split between chunks', async () => {
    const line = Buffer.from('{"type":"ADDED","object":{"note":"héllo ✓"}}\n', 'utf8');
    const cut = line.indexOf(0xe2) + 1; // inside the three bytes of ✓
    const { frames } = await decode(line.subarray(0, cut), line.subarray(cut));
    expect(frames).toEqual([
      { kind: 'decoded', value: { type: 'ADDED', object: { note: 'héllo ✓' } } },
    ]);
  });

  it('yields several frames from one chunk and skips blank lines', async () => {
    const { frames } = await decode('{"n":1}\n\n  \n{"n":2}\n');
    expect(frames.map((f) => (f.kind === 'decoded' ? f.value : f))).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('yields a line that is not JSON as a garbled frame and carries on', async () => {
    const { frames } = await decode('{"n":1}\n{"broken":\n{"n":2}\n');
    expect(frames[0]).toEqual({ kind: 'decoded', value: { n: 1 } });
    expect(frames[1]?.kind).toBe('garbled');
    expect(frames[2]).toEqual({ kind: 'decoded', value: { n: 2 } });
  });

  it('reports every chunk of bytes, even one that completes no frame', async () => {
    const { frames, bytes } = await decode('{"n":', '1', '}\n');
    expect(bytes).toEqual([5, 1, 2]);
    expect(frames).toHaveLength(1);
  });

  it('throws when the stream ends inside a frame: a dropped connection, not a clean end', async () => {
    await expect(decode('{"n":1}\n{"n":')).rejects.toBeInstanceOf(TruncatedFrameError);
  });

  it('accepts a last frame with only whitespace after it', async () => {
    const { frames } = await decode('{"n":1}\n  ');
    expect(frames).toHaveLength(1);
  });

  it('reports a frame past the size limit as garbled at once, skips it and reads on', async () => {
    async function* parts(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"n":1}\n{"big":"');
      // Three 8-byte chunks with no newline: the limit (16) is crossed by the second.
      yield Buffer.from('xxxxxxxx');
      yield Buffer.from('xxxxxxxx');
      yield Buffer.from('xxxxxxxx');
      yield Buffer.from('"}\n{"n":2}\n');
    }
    const frames: WatchFrame[] = [];
    for await (const frame of splitWatchFrames(jsonWatchFramer, parts(), undefined, 16))
      frames.push(frame);
    expect(frames).toEqual([
      { kind: 'decoded', value: { n: 1 } },
      { kind: 'garbled', error: 'watch frame larger than 16 bytes' },
      { kind: 'decoded', value: { n: 2 } },
    ]);
  });

  it('reports a frame over the limit that ends in the same chunk as garbled', async () => {
    const frames: WatchFrame[] = [];
    const line = `{"big":"${'x'.repeat(40)}"}\n{"n":3}\n`;
    for await (const frame of splitWatchFrames(jsonWatchFramer, chunks(line), undefined, 16))
      frames.push(frame);
    expect(frames).toEqual([
      { kind: 'garbled', error: 'watch frame larger than 16 bytes' },
      { kind: 'decoded', value: { n: 3 } },
    ]);
  });

  it('throws when the stream ends inside a frame that was too large', async () => {
    async function* parts(): AsyncGenerator<Buffer> {
      yield Buffer.from(`{"big":"${'x'.repeat(40)}`);
    }
    const frames: WatchFrame[] = [];
    await expect(
      (async () => {
        for await (const frame of splitWatchFrames(jsonWatchFramer, parts(), undefined, 16))
          frames.push(frame);
      })(),
    ).rejects.toBeInstanceOf(TruncatedFrameError);
    expect(frames).toEqual([{ kind: 'garbled', error: 'watch frame larger than 16 bytes' }]);
  });
});
