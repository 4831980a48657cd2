/**
 * What a WATCH response body's frames are, whichever encoding carried them, and what feeds a body
 * to an encoding's framer: the JSON line splitter (./watch-line-splitter.ts) and the protobuf
 * length-prefix splitter (./protobuf-watch-splitter.ts) differ only in where a frame ends and how
 * it decodes, so the frame type, its bound, the truncation error, the byte counting and the bytes
 * held between chunks are written once, here.
 */

/**
 * One frame of a watch stream, decoded into its JSON form (`{type, object}`) whichever encoding
 * carried it. A frame that does not decode is still a frame (`garbled`), not an exception: what
 * to do about it (relist) is the reflector's decision, and throwing here would look like a
 * dropped connection (reconnect from the same cursor, replaying the same bad frame).
 */
export type WatchFrame =
  | { readonly kind: 'decoded'; readonly value: unknown }
  | { readonly kind: 'garbled'; readonly error: string };

/** The connection ended in the middle of a frame: a dropped connection, never a clean end. */
export class TruncatedFrameError extends Error {
  override readonly name = 'TruncatedFrameError';
}

/**
 * Longest frame accepted: 16 MiB. One frame carries one object, and etcd refuses objects over
 * 1.5 MiB by default, so only a broken or hostile peer sends more. Without a bound, one endless
 * frame would be held whole and then decoded in a single allocation, which a worker's heap limit
 * does not contain (Node grants a worker 16 MiB past its limit to die gracefully; one larger
 * allocation aborts the whole process).
 */
export const MAX_WATCH_FRAME_BYTES = 16 * 1024 * 1024;

/** The frame a splitter yields for one longer than its bound: garbled, so the reflector relists. */
export function frameTooLarge(maxFrameBytes: number): WatchFrame {
  return { kind: 'garbled', error: `watch frame larger than ${maxFrameBytes} bytes` };
}

/**
 * One encoding's framing, fed a body chunk by chunk and holding whatever a frame still lacks:
 * `push` appends to `out` the frames a chunk completes, in order, each decoded before `push`
 * returns (so the framer may reuse the bytes it assembled a frame in); `end` hears that the body
 * ended and says what it ended inside (`a frame (12 bytes)`), `undefined` when it ended between
 * frames. A frame longer than the framer's bound is appended as `frameTooLarge` and its bytes are
 * dropped, never held.
 *
 * Why synchronous: a watch-list's initial events are tens of thousands of frames cut into two or
 * three times as many socket chunks (the API server's TLS records of a few KiB). A generator per
 * chunk and an async step per frame cost the reader more than decoding the frames did; a LIST page
 * pays neither, and the initial events are a LIST's bytes.
 */
export interface WatchFramer {
  push(chunk: Buffer, out: WatchFrame[]): void;
  end(): string | undefined;
}

/** A framer for one body, bounded by `maxFrameBytes`: what the pod API picks by content type. */
export type WatchFramerFactory = (maxFrameBytes?: number) => WatchFramer;

/**
 * A WATCH body's bytes in, its frames out, for readers that iterate the body (the LeaderWorkerSet
 * watch, tests): a fresh framer per body, fed every chunk. `onBytes` hears every chunk as it
 * arrives, before any frame in it is complete: idle detection needs "the server sent something",
 * not "a frame finished", or one slow multi-megabyte frame would look like a dead connection. A
 * body that ends inside a frame throws `TruncatedFrameError`.
 */
export async function* splitWatchFrames(
  framer: WatchFramerFactory,
  chunks: AsyncIterable<Uint8Array>,
  onBytes?: (count: number) => void,
  maxFrameBytes = MAX_WATCH_FRAME_BYTES,
): AsyncGenerator<WatchFrame, void, undefined> {
  const body = framer(maxFrameBytes);
  const frames: WatchFrame[] = [];
  for await (const raw of chunks) {
    const chunk = asBuffer(raw);
    onBytes?.(chunk.length);
    body.push(chunk, frames);
    yield* frames;
    frames.length = 0;
  }
  endOfBody(body);
}

/** A Buffer over the same bytes (no copy), whatever view the stream gave. */
export function asBuffer(raw: Uint8Array): Buffer {
  return Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.length);
}

/** The body ended: throws `TruncatedFrameError` when it ended inside a frame. */
export function endOfBody(framer: WatchFramer): void {
  const inside = framer.end();
  if (inside !== undefined) throw new TruncatedFrameError(`watch stream ended inside ${inside}`);
}

/**
 * A frame's bytes that arrived in more than one chunk, copied into one buffer that is reused frame
 * after frame: a frame is decoded before the next chunk is pushed (`WatchFramer`), so nothing
 * still reads the bytes when they are overwritten. Joining the chunks afresh per frame
 * (`Buffer.concat`) allocated a buffer outside the heap per frame, most of the framing's cost.
 */
export class FrameAssembly {
  #bytes = Buffer.allocUnsafe(INITIAL_ASSEMBLY_BYTES);
  #length = 0;

  /** Bytes held. */
  get length(): number {
    return this.#length;
  }

  /** Copies `chunk` after the bytes held, growing the buffer (doubling) when it must. */
  append(chunk: Uint8Array): void {
    const needed = this.#length + chunk.length;
    if (needed > this.#bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.#bytes.length * 2));
      this.#bytes.copy(grown, 0, 0, this.#length);
      this.#bytes = grown;
    }
    this.#bytes.set(chunk, this.#length);
    this.#length = needed;
  }

  /** The bytes held, as a view valid until the next `append` or `clear`. */
  view(): Buffer {
    return this.#bytes.subarray(0, this.#length);
  }

  /**
   * Holds nothing after; a buffer grown for a rare large frame is let go of, so one such frame
   * does not pin its size for the life of the stream.
   */
  clear(): void {
    this.#length = 0;
    if (this.#bytes.length > RETAINED_ASSEMBLY_BYTES) {
      this.#bytes = Buffer.allocUnsafe(INITIAL_ASSEMBLY_BYTES);
    }
  }
}

/** A few engine pods' frames: most frames fit without the buffer growing. */
const INITIAL_ASSEMBLY_BYTES = 64 * 1024;

/** Kept between frames up to this size; past it the buffer is let go of when cleared. */
const RETAINED_ASSEMBLY_BYTES = 1024 * 1024;
