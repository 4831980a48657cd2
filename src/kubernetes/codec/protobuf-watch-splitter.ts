/**
 * Splits a protobuf WATCH response body into frames. The API server frames each event of a
 * protobuf watch (`application/vnd.kubernetes.protobuf;stream=watch`) with a four-byte big-endian
 * length (apimachinery's `LengthDelimitedFramer`); chunks from the socket cut frames anywhere, the
 * length prefix included. Each frame decodes to the same `{type, object}` value a JSON line does,
 * so ./watch-frame-parser.ts reads both alike.
 */
import { decodeProtobufWatchEvent } from './pod-protobuf.js';
import { ProtobufDecodeError } from './protobuf-reader.js';
import {
  FrameAssembly,
  frameTooLarge,
  MAX_WATCH_FRAME_BYTES,
  type WatchFrame,
  type WatchFramer,
  type WatchFramerFactory,
} from './watch-framing.js';

const LENGTH_PREFIX_BYTES = 4;
const NO_BYTES = new Uint8Array(0);

function decodeFrame(frame: Uint8Array): WatchFrame {
  try {
    return { kind: 'decoded', value: decodeProtobufWatchEvent(frame) };
  } catch (error) {
    if (!(error instanceof ProtobufDecodeError)) throw error;
    return { kind: 'garbled', error: `watch frame is not a protobuf WatchEvent: ${error.message}` };
  }
}

/**
 * Length-prefixed frames: a four-byte length, then that many bytes of `WatchEvent`. A frame that
 * lies inside one chunk is decoded where it lies; only one cut by a chunk's end is copied, into
 * the reused `FrameAssembly`, the prefix as much as the frame.
 */
class LengthPrefixFramer implements WatchFramer {
  readonly #maxFrameBytes: number;
  /** What a prefix or a frame cut by a chunk's end has so far. */
  readonly #assembly = new FrameAssembly();
  /** The current frame's length, once its prefix is read. */
  #frameLength: number | undefined;
  /** Bytes still to drop of a frame reported as too large. */
  #skipping = 0;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  push(chunk: Buffer, out: WatchFrame[]): void {
    let at = 0;
    const end = chunk.length;
    while (at < end) {
      if (this.#skipping > 0) {
        const dropped = Math.min(this.#skipping, end - at);
        this.#skipping -= dropped;
        at += dropped;
        continue;
      }
      const wanted = this.#frameLength ?? LENGTH_PREFIX_BYTES;
      const assembly = this.#assembly;
      if (assembly.length === 0 && end - at >= wanted) {
        // The common case: the whole prefix, or the whole frame, is in this chunk.
        if (this.#frameLength === undefined) this.#prefix(chunk.readUInt32BE(at), out);
        else this.#frame(chunk.subarray(at, at + wanted), out);
        at += wanted;
        continue;
      }
      // Cut by the chunk's end: gather it, and read it once whole.
      const taken = Math.min(wanted - assembly.length, end - at);
      assembly.append(chunk.subarray(at, at + taken));
      at += taken;
      if (assembly.length < wanted) return;
      const whole = assembly.view();
      if (this.#frameLength === undefined) this.#prefix(whole.readUInt32BE(0), out);
      else this.#frame(whole, out);
      assembly.clear();
    }
  }

  /** A length prefix read: the frame it announces is awaited, or skipped when too large. */
  #prefix(frameLength: number, out: WatchFrame[]): void {
    if (frameLength > this.#maxFrameBytes) {
      this.#skipping = frameLength;
      out.push(frameTooLarge(this.#maxFrameBytes));
      return;
    }
    this.#frameLength = frameLength;
    // An empty frame is whole with its prefix: no chunk is left to complete it.
    if (frameLength === 0) this.#frame(NO_BYTES, out);
  }

  #frame(frame: Uint8Array, out: WatchFrame[]): void {
    this.#frameLength = undefined;
    out.push(decodeFrame(frame));
  }

  end(): string | undefined {
    if (this.#skipping > 0) return 'a frame that was too large';
    if (this.#frameLength === undefined && this.#assembly.length === 0) return undefined;
    return `a frame (${this.#assembly.length} of ${this.#frameLength ?? '?'} bytes)`;
  }
}

/**
 * The framer of a protobuf watch body (`WatchFramer`), a change's pod read as an `EncodedPod`: a
 * frame longer than `maxFrameBytes` is appended as `garbled` once its length is read, and its
 * bytes are skipped, never held; a body that ends inside a frame (or inside a length prefix) ends
 * inside a frame.
 */
export const protobufWatchFramer: WatchFramerFactory = (maxFrameBytes = MAX_WATCH_FRAME_BYTES) =>
  new LengthPrefixFramer(maxFrameBytes);
