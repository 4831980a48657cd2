/**
 * What a WATCH response body's frames are, whichever encoding carried them, and the one loop that
 * feeds a body to an encoding's framer: the JSON line splitter (./watch-line-splitter.ts) and the
 * protobuf length-prefix splitter (./protobuf-watch-splitter.ts) differ only in where a frame
 * ends and how it decodes, so the frame type, its bound, the truncation error, the byte counting
 * and the bytes held between chunks are written once, here.
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
const MAX_WATCH_FRAME_BYTES = 16 * 1024 * 1024;

/** The frame a splitter yields for one longer than its bound: garbled, so the reflector relists. */
export function frameTooLarge(maxFrameBytes: number): WatchFrame {
  return { kind: 'garbled', error: `watch frame larger than ${maxFrameBytes} bytes` };
}

/**
 * A WATCH body's bytes in, its frames out: what both splitters are, so the pod API picks one by
 * content type. A frame longer than `maxFrameBytes` (default `MAX_WATCH_FRAME_BYTES`) is yielded
 * as `frameTooLarge` and its bytes are dropped, never held; a body that ends inside a frame
 * throws `TruncatedFrameError`.
 */
export type WatchFrameSplitter = (
  chunks: AsyncIterable<Uint8Array>,
  onBytes?: (count: number) => void,
  maxFrameBytes?: number,
) => AsyncGenerator<WatchFrame, void, undefined>;

/**
 * One encoding's framing, fed a body chunk by chunk and holding whatever a frame still lacks:
 * `push` yields the frames a chunk completes, as they complete; `end` hears that the body ended
 * and says what it ended inside (`a frame (12 bytes)`), `undefined` when it ended between frames.
 */
export interface WatchFramer {
  push(chunk: Buffer): Generator<WatchFrame, void, undefined>;
  end(): string | undefined;
}

/**
 * The splitter of one framing (see `WatchFrameSplitter`): a fresh framer per body, fed every
 * chunk. `onBytes` hears every chunk as it arrives, before any frame in it is complete: the
 * reflector's idle detection needs "the server sent something", not "a frame finished", or one
 * slow multi-megabyte frame would look like a dead connection.
 */
export function watchFrameSplitter(
  framer: (maxFrameBytes: number) => WatchFramer,
): WatchFrameSplitter {
  return async function* (chunks, onBytes, maxFrameBytes = MAX_WATCH_FRAME_BYTES) {
    const body = framer(maxFrameBytes);
    for await (const raw of chunks) {
      // A Buffer over the same bytes (no copy), whatever view the stream gave.
      const chunk = Buffer.isBuffer(raw)
        ? raw
        : Buffer.from(raw.buffer, raw.byteOffset, raw.length);
      onBytes?.(chunk.length);
      yield* body.push(chunk);
    }
    const inside = body.end();
    if (inside !== undefined) throw new TruncatedFrameError(`watch stream ended inside ${inside}`);
  };
}

/**
 * Bytes received and not yet consumed, as the chunks they came in: joined only once enough have
 * arrived for what a framer awaits, so a large frame is copied once, not once per chunk.
 */
export class PendingBytes {
  #chunks: Buffer[] = [];
  #length = 0;

  /** Bytes held. */
  get length(): number {
    return this.#length;
  }

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  /** Everything held, as one buffer (the chunk itself when there is one), and nothing held after. */
  take(): Buffer {
    const joined =
      this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
    this.clear();
    return joined;
  }

  /** Drops everything held (a frame found too large). */
  clear(): void {
    this.#chunks = [];
    this.#length = 0;
  }
}
