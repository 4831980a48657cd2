/**
 * Splits a WATCH response body into frames. The API server's JSON watch encoding writes one
 * `{"type": ..., "object": ...}` document per line, so a frame ends at a newline byte; chunks from
 * the socket cut frames anywhere, including inside a multi-byte UTF-8 character, so splitting
 * happens on bytes and decoding only on whole lines.
 */
import type { WatchFrame, WatchFramer } from './watch-framing.js';
import { frameTooLarge, PendingBytes, watchFrameSplitter } from './watch-framing.js';

const NEWLINE = 0x0a;

function decodeLine(line: Buffer): WatchFrame | undefined {
  const text = line.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return { kind: 'decoded', value: JSON.parse(text) };
  } catch (error) {
    return { kind: 'garbled', error: error instanceof Error ? error.message : String(error) };
  }
}

/** JSON lines: a frame ends at a newline; blank lines are no frames. */
class LineFramer implements WatchFramer {
  readonly #maxFrameBytes: number;
  /** The start of the current line. */
  readonly #pending = new PendingBytes();
  /** Inside a frame already reported as too large: skip to its newline. */
  #skipping = false;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  *push(chunk: Buffer): Generator<WatchFrame, void, undefined> {
    const pending = this.#pending;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) break;
      const piece = chunk.subarray(start, end);
      start = end + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      if (pending.length + piece.length > this.#maxFrameBytes) {
        pending.clear();
        yield frameTooLarge(this.#maxFrameBytes);
        continue;
      }
      pending.push(piece);
      const frame = decodeLine(pending.take());
      if (frame) yield frame;
    }
    if (start < chunk.length && !this.#skipping) {
      pending.push(chunk.subarray(start));
      if (pending.length > this.#maxFrameBytes) {
        pending.clear();
        this.#skipping = true;
        yield frameTooLarge(this.#maxFrameBytes);
      }
    }
  }

  end(): string | undefined {
    if (this.#skipping) return 'a frame that was too large';
    // Trailing white space after the last line is no frame.
    const rest = this.#pending.take();
    return rest.toString('utf8').trim() === '' ? undefined : `a frame (${rest.length} bytes)`;
  }
}

/**
 * Frames from a JSON watch body (`WatchFrameSplitter`). A frame longer than `maxFrameBytes` is
 * yielded as `garbled` as soon as it crosses the limit (an unreadable frame: the reflector
 * relists), and its bytes are dropped up to its newline.
 */
export const decodeWatchFrames = watchFrameSplitter(
  (maxFrameBytes) => new LineFramer(maxFrameBytes),
);
