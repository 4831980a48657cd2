/**
 * Splits a protobuf WATCH response body into frames. The API server frames each event of a
 * protobuf watch (`application/vnd.kubernetes.protobuf;stream=watch`) with a four-byte big-endian
 * length (apimachinery's `LengthDelimitedFramer`); chunks from the socket cut frames anywhere, the
 * length prefix included. Each frame decodes to the same `{type, object}` value a JSON line does,
 * so ./watch-frame-parser.ts reads both alike.
 */
import { decodeProtobufPodWatchEvent } from './protobuf-pod-decoder.js';
import { ProtobufDecodeError } from './protobuf-reader.js';
import {
  asBuffer,
  frameTooLarge,
  MAX_WATCH_FRAME_BYTES,
  TruncatedFrameError,
  type WatchFrame,
} from './watch-line-splitter.js';

const LENGTH_PREFIX_BYTES = 4;

function decodeFrame(frame: Uint8Array): WatchFrame {
  try {
    return { kind: 'decoded', value: decodeProtobufPodWatchEvent(frame) };
  } catch (error) {
    if (!(error instanceof ProtobufDecodeError)) throw error;
    return { kind: 'garbled', error: `watch frame is not a protobuf WatchEvent: ${error.message}` };
  }
}

/**
 * Frames from a byte stream, with the same contract as ./watch-line-splitter.ts
 * `decodeWatchFrames`: `onBytes` hears every chunk on arrival; a frame longer than
 * `maxFrameBytes` is yielded as `garbled` once its length is read, and its bytes are skipped, never
 * held; a stream that ends inside a frame (or inside a length prefix) throws `TruncatedFrameError`.
 */
export async function* decodeProtobufWatchFrames(
  chunks: AsyncIterable<Uint8Array>,
  onBytes?: (count: number) => void,
  maxFrameBytes = MAX_WATCH_FRAME_BYTES,
): AsyncGenerator<WatchFrame, void, undefined> {
  /**
   * Bytes received and not yet consumed, as the chunks they came in: joined only once enough have
   * arrived for what is awaited (a prefix, a whole frame), so a large frame is copied once, not
   * once per chunk.
   */
  let pending: Buffer[] = [];
  let pendingLength = 0;
  /** The current frame's length, once its prefix is read. */
  let frameLength: number | undefined;
  /** Bytes still to drop of a frame reported as too large. */
  let skipping = 0;
  for await (const raw of chunks) {
    const chunk = asBuffer(raw);
    onBytes?.(chunk.length);
    if (skipping >= chunk.length) {
      skipping -= chunk.length;
      continue;
    }
    pending.push(skipping > 0 ? chunk.subarray(skipping) : chunk);
    pendingLength += chunk.length - skipping;
    skipping = 0;
    const awaited = (): number => frameLength ?? LENGTH_PREFIX_BYTES;
    if (pendingLength < awaited()) continue;
    let data: Buffer = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending);
    pending = [];
    pendingLength = 0;
    for (;;) {
      if (frameLength === undefined) {
        if (data.length < LENGTH_PREFIX_BYTES) break;
        frameLength = data.readUInt32BE(0);
        data = data.subarray(LENGTH_PREFIX_BYTES);
        if (frameLength > maxFrameBytes) {
          const dropped = Math.min(frameLength, data.length);
          skipping = frameLength - dropped;
          data = data.subarray(dropped);
          frameLength = undefined;
          yield frameTooLarge(maxFrameBytes);
          if (skipping > 0) break;
          continue;
        }
      }
      if (data.length < frameLength) break;
      const frame = data.subarray(0, frameLength);
      data = data.subarray(frameLength);
      frameLength = undefined;
      yield decodeFrame(frame);
    }
    if (data.length > 0) {
      pending = [data];
      pendingLength = data.length;
    }
  }
  if (skipping > 0) {
    throw new TruncatedFrameError('watch stream ended inside a frame that was too large');
  }
  if (frameLength !== undefined || pendingLength > 0) {
    throw new TruncatedFrameError(
      `watch stream ended inside a frame (${pendingLength} of ${frameLength ?? '?'} bytes)`,
    );
  }
}
