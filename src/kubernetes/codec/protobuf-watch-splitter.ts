/**
 * Splits a protobuf WATCH response body into frames. The API server frames each event of a
 * protobuf watch (`application/vnd.kubernetes.protobuf;stream=watch`) with a four-byte big-endian
 * length (apimachinery's `LengthDelimitedFramer`); chunks from the socket cut frames anywhere, the
 * length prefix included. Each frame decodes to the same `{type, object}` value a JSON line does,
 * so ./watch-frame-parser.ts reads both alike.
 */
import { decodeProtobufWatchEvent } from './pod-protobuf.js';
import { ProtobufDecodeError } from './protobuf-reader.js';
import type { WatchFrame, WatchFramer } from './watch-framing.js';
import {
  frameTooLarge,
  PendingBytes,
  type WatchFrameSplitter,
  watchFrameSplitter,
} from './watch-framing.js';

const LENGTH_PREFIX_BYTES = 4;

function decodeFrame(frame: Uint8Array): WatchFrame {
  try {
    return { kind: 'decoded', value: decodeProtobufWatchEvent(frame) };
  } catch (error) {
    if (!(error instanceof ProtobufDecodeError)) throw error;
    return { kind: 'garbled', error: `watch frame is not a protobuf WatchEvent: ${error.message}` };
  }
}

/** Length-prefixed frames: a four-byte length, then that many bytes of `WatchEvent`. */
class LengthPrefixFramer implements WatchFramer {
  readonly #maxFrameBytes: number;
  /** What is awaited (a prefix, a whole frame), held until enough has arrived. */
  readonly #pending = new PendingBytes();
  /** The current frame's length, once its prefix is read. */
  #frameLength: number | undefined;
  /** Bytes still to drop of a frame reported as too large. */
  #skipping = 0;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  *push(chunk: Buffer): Generator<WatchFrame, void, undefined> {
    if (this.#skipping >= chunk.length) {
      this.#skipping -= chunk.length;
      return;
    }
    this.#pending.push(this.#skipping > 0 ? chunk.subarray(this.#skipping) : chunk);
    this.#skipping = 0;
    if (this.#pending.length < (this.#frameLength ?? LENGTH_PREFIX_BYTES)) return;
    let data = this.#pending.take();
    for (;;) {
      if (this.#frameLength === undefined) {
        if (data.length < LENGTH_PREFIX_BYTES) break;
        const frameLength = data.readUInt32BE(0);
        data = data.subarray(LENGTH_PREFIX_BYTES);
        if (frameLength > this.#maxFrameBytes) {
          const dropped = Math.min(frameLength, data.length);
          this.#skipping = frameLength - dropped;
          data = data.subarray(dropped);
          yield frameTooLarge(this.#maxFrameBytes);
          if (this.#skipping > 0) break;
          continue;
        }
        this.#frameLength = frameLength;
      }
      if (data.length < this.#frameLength) break;
      const frame = data.subarray(0, this.#frameLength);
      data = data.subarray(this.#frameLength);
      this.#frameLength = undefined;
      yield decodeFrame(frame);
    }
    if (data.length > 0) this.#pending.push(data);
  }

  end(): string | undefined {
    if (this.#skipping > 0) return 'a frame that was too large';
    if (this.#frameLength === undefined && this.#pending.length === 0) return undefined;
    return `a frame (${this.#pending.length} of ${this.#frameLength ?? '?'} bytes)`;
  }
}

/**
 * Frames from a protobuf watch body (`WatchFrameSplitter`, the same contract as the JSON one), a
 * change's pod read as an `EncodedPod`: a frame longer than `maxFrameBytes` is yielded as
 * `garbled` once its length is read, and its bytes are skipped, never held; a body that ends
 * inside a frame (or inside a length prefix) throws `TruncatedFrameError`.
 */
export const decodeProtobufWatchFrames: WatchFrameSplitter = watchFrameSplitter(
  (maxFrameBytes) => new LengthPrefixFramer(maxFrameBytes),
);
