/**
 * Splits a WATCH response body into frames. The API server's JSON watch encoding writes one
 * `{"type": ..., "object": ...}` document per line, so a frame ends at a newline byte; chunks from
 * the socket cut frames anywhere, including inside a multi-byte UTF-8 character, so splitting
 * happens on bytes and decoding only on whole lines.
 */

/**
 * One frame of a watch stream, decoded into its JSON form (`{type, object}`) whichever encoding
 * carried it (JSON lines here, protobuf in ./protobuf-watch-splitter.ts). A frame that does not
 * decode is still a frame (`garbled`), not an
 * exception: what to do about it (relist) is the reflector's decision, and throwing here would
 * look like a dropped connection (reconnect from the same cursor, replaying the same bad line).
 */
export type WatchFrame =
  | { readonly kind: 'decoded'; readonly value: unknown }
  | { readonly kind: 'garbled'; readonly error: string };

/** The connection ended in the middle of a frame: a dropped connection, never a clean end. */
export class TruncatedFrameError extends Error {
  override readonly name = 'TruncatedFrameError';
}

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

/**
 * Longest frame accepted: 16 MiB. One frame carries one object, and etcd refuses objects over
 * 1.5 MiB by default, so only a broken or hostile peer sends more. Without a bound, one endless
 * line would be held whole and then decoded in a single allocation, which a worker's heap limit
 * does not contain (Node grants a worker 16 MiB past its limit to die gracefully; one larger
 * allocation aborts the whole process).
 */
export const MAX_WATCH_FRAME_BYTES = 16 * 1024 * 1024;

/** The frame a splitter yields for one longer than its bound: garbled, so the reflector relists. */
export function frameTooLarge(maxFrameBytes: number): WatchFrame {
  return { kind: 'garbled', error: `watch frame larger than ${maxFrameBytes} bytes` };
}

/** A chunk as a `Buffer` over the same bytes (no copy), whatever view the stream gave. */
export function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
}

/**
 * Frames from a byte stream. `onBytes` hears every chunk as it arrives, before any frame in it is
 * complete: the reflector's idle detection needs "the server sent something", not "a frame
 * finished", or one slow multi-megabyte frame would look like a dead connection.
 *
 * A frame longer than `maxFrameBytes` is yielded as `garbled` as soon as it crosses the limit (an
 * unreadable frame: the reflector relists), and its bytes are dropped up to its newline.
 */
export async function* decodeWatchFrames(
  chunks: AsyncIterable<Uint8Array>,
  onBytes?: (count: number) => void,
  maxFrameBytes = MAX_WATCH_FRAME_BYTES,
): AsyncGenerator<WatchFrame, void, undefined> {
  let pending: Buffer[] = [];
  let pendingLength = 0;
  /** Inside a frame already reported as too large: skip to its newline. */
  let skipping = false;
  for await (const raw of chunks) {
    const chunk = asBuffer(raw);
    onBytes?.(chunk.length);
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) break;
      const piece = chunk.subarray(start, end);
      start = end + 1;
      if (skipping) {
        skipping = false;
        continue;
      }
      if (pendingLength + piece.length > maxFrameBytes) {
        pending = [];
        pendingLength = 0;
        yield frameTooLarge(maxFrameBytes);
        continue;
      }
      const line = pending.length > 0 ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      pendingLength = 0;
      const frame = decodeLine(line);
      if (frame) yield frame;
    }
    if (start < chunk.length && !skipping) {
      pending.push(chunk.subarray(start));
      pendingLength += chunk.length - start;
      if (pendingLength > maxFrameBytes) {
        pending = [];
        pendingLength = 0;
        skipping = true;
        yield frameTooLarge(maxFrameBytes);
      }
    }
  }
  if (skipping) {
    throw new TruncatedFrameError('watch stream ended inside a frame that was too large');
  }
  if (pending.length > 0) {
    const rest = Buffer.concat(pending);
    if (rest.toString('utf8').trim() !== '') {
      throw new TruncatedFrameError(`watch stream ended inside a frame (${rest.length} bytes)`);
    }
  }
}
