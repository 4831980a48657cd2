/**
 * Splits a WATCH response body into frames. The API server's JSON watch encoding writes one
 * `{"type": ..., "object": ...}` document per line, so a frame ends at a newline byte; chunks from
 * the socket cut frames anywhere, including inside a multi-byte UTF-8 character, so splitting
 * happens on bytes and decoding only on whole lines.
 */
import { parseWithoutManagedFields } from './managed-fields-skip.js';
import {
  FrameAssembly,
  frameTooLarge,
  MAX_WATCH_FRAME_BYTES,
  type WatchFrame,
  type WatchFramer,
  type WatchFramerFactory,
} from './watch-framing.js';

const NEWLINE = 0x0a;

/** A line's frame: its JSON (managedFields skipped, ./managed-fields-skip.ts), or none if blank. */
function decodeLine(line: Buffer): WatchFrame | undefined {
  try {
    return { kind: 'decoded', value: parseWithoutManagedFields(line) };
  } catch (error) {
    // Only a line that does not parse can be blank: the check stays off the path of every frame.
    if (line.toString('utf8').trim() === '') return undefined;
    return { kind: 'garbled', error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * JSON lines: a frame ends at a newline; blank lines are no frames. A line inside one chunk is
 * parsed where it lies; only one cut by a chunk's end is copied, into the reused `FrameAssembly`.
 */
class LineFramer implements WatchFramer {
  readonly #maxFrameBytes: number;
  /** The start of the current line, when a chunk's end cut it. */
  readonly #assembly = new FrameAssembly();
  /** Inside a frame already reported as too large: skip to its newline. */
  #skipping = false;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  push(chunk: Buffer, out: WatchFrame[]): void {
    const assembly = this.#assembly;
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
      if (assembly.length + piece.length > this.#maxFrameBytes) {
        assembly.clear();
        out.push(frameTooLarge(this.#maxFrameBytes));
        continue;
      }
      let frame: WatchFrame | undefined;
      if (assembly.length === 0) frame = decodeLine(piece);
      else {
        assembly.append(piece);
        frame = decodeLine(assembly.view());
        assembly.clear();
      }
      if (frame) out.push(frame);
    }
    if (start < chunk.length && !this.#skipping) {
      if (assembly.length + chunk.length - start > this.#maxFrameBytes) {
        assembly.clear();
        this.#skipping = true;
        out.push(frameTooLarge(this.#maxFrameBytes));
      } else assembly.append(chunk.subarray(start));
    }
  }

  end(): string | undefined {
    if (this.#skipping) return 'a frame that was too large';
    // Trailing white space after the last line is no frame.
    const rest = this.#assembly.view();
    const inside =
      rest.toString('utf8').trim() === '' ? undefined : `a frame (${rest.length} bytes)`;
    this.#assembly.clear();
    return inside;
  }
}

/**
 * The framer of a JSON watch body (`WatchFramer`). A frame longer than `maxFrameBytes` is
 * appended as `garbled` as soon as it crosses the limit (an unreadable frame: the reflector
 * relists), and its bytes are dropped up to its newline.
 */
export const jsonWatchFramer: WatchFramerFactory = (maxFrameBytes = MAX_WATCH_FRAME_BYTES) =>
  new LineFramer(maxFrameBytes);
