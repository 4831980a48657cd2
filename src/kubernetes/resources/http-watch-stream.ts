/**
 * One open WATCH response, read as its bytes arrive: every socket chunk is framed and its frames
 * decoded at once (`WatchFramer`), into a queue the reflector takes them from.
 *
 * Why push, not pull: the body used to be iterated (`for await` over the response, a generator per
 * chunk, an async generator step per frame). A watch-list's initial events are a LIST's bytes —
 * 10,000 engine pods are ~49 MB in ~32,000 TLS records — and that machinery cost the worker thread
 * more than decoding the pods did, where a LIST page pays none of it. Read here, a chunk costs one
 * `data` callback and a frame costs its decode; the reflector's `next()` on a non-empty queue is
 * an already-settled promise.
 *
 * Bounded: the body is paused while the frames not yet taken came from more than
 * `MAX_UNREAD_BYTES` of the body, and resumed once the reader has taken them all, so a reader that
 * stops reading holds at most that much plus a frame (TCP's own flow control does the rest).
 */
import { finished, type Readable } from 'node:stream';
import { ApiConnectionError } from '../client/api-errors.js';
import type { ApiResponse } from '../client/api-exchange.js';
import { asBuffer, endOfBody, type WatchFrame, type WatchFramer } from '../codec/watch-framing.js';
import type { WatchStream } from './pod-api.js';

/**
 * Body bytes whose frames may wait for the reader before the body is paused: a LIST page's worth
 * of engine pods (500 × ~5 KB in protobuf), so a watch-list's initial events flow while the
 * reflector batches them, and a stalled reader pins little.
 */
export const MAX_UNREAD_BYTES = 4 * 1024 * 1024;

/** How the body ended: cleanly (the server's timeout), or with what went wrong. */
type Ending = { readonly failure: false } | { readonly failure: true; readonly error: unknown };

/** One open WATCH response (`WatchStream`), iterated once. */
export class HttpWatchStream implements WatchStream {
  readonly #open: ApiResponse;
  /** The body as the frames come in: the response's, or its inflating stream when gzipped. */
  readonly #body: Readable;
  readonly #signal: AbortSignal;
  readonly #onBytes: ((count: number) => void) | undefined;
  readonly #framer: WatchFramer;
  /** Frames decoded and not yet taken, from `#taken` on. */
  #frames: WatchFrame[] = [];
  #taken = 0;
  /** Body bytes read since the reader last emptied the queue. */
  #unreadBytes = 0;
  #paused = false;
  #ending: Ending | undefined;
  /** The reader waiting for a frame or the end, if one is. */
  #wake: (() => void) | undefined;
  #closed = false;
  #iterated = false;

  constructor(
    open: ApiResponse,
    body: Readable,
    signal: AbortSignal,
    onBytes: ((count: number) => void) | undefined,
    framer: WatchFramer,
  ) {
    this.#open = open;
    this.#body = body;
    this.#signal = signal;
    this.#onBytes = onBytes;
    this.#framer = framer;
    // A signal that aborts while nobody is reading still releases the connection at once.
    signal.addEventListener('abort', () => this.close(), { once: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchFrame> {
    if (this.#iterated) throw new Error('a WatchStream can be iterated only once');
    this.#iterated = true;
    this.#read();
    return {
      next: () => this.#next(),
      return: () => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  takeReady(): WatchFrame | undefined {
    if (this.#taken >= this.#frames.length) return undefined;
    const value = this.#frames[this.#taken++] as WatchFrame;
    if (this.#taken === this.#frames.length) this.#emptied();
    return value;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#end({ failure: true, error: new Error('the watch was closed') });
    this.#open.close();
  }

  /** Starts the body flowing into the framer. */
  #read(): void {
    const body = this.#body;
    body.on('data', (raw: Uint8Array) => this.#chunk(raw));
    finished(body, (error) => {
      const cut = error ?? this.#open.truncation();
      if (cut) {
        this.#end({ failure: true, error: cut });
        return;
      }
      try {
        endOfBody(this.#framer);
        this.#end({ failure: false });
      } catch (truncated) {
        this.#end({ failure: true, error: truncated });
      }
    });
  }

  #chunk(raw: Uint8Array): void {
    if (this.#ending) return;
    const chunk = asBuffer(raw);
    this.#onBytes?.(chunk.length);
    try {
      this.#framer.push(chunk, this.#frames);
    } catch (error) {
      // A decoder's own fault (not a garbled frame, which is a frame): the stream fails with it.
      this.#end({ failure: true, error });
      this.#open.close();
      return;
    }
    this.#unreadBytes += chunk.length;
    if (this.#unreadBytes > MAX_UNREAD_BYTES && !this.#paused) {
      this.#paused = true;
      this.#body.pause();
    }
    if (this.#taken < this.#frames.length) this.#wakeReader();
  }

  /** The body ended (or failed, or was closed): the first ending is the one the reader sees. */
  #end(ending: Ending): void {
    if (this.#ending) return;
    this.#ending = ending;
    this.#wakeReader();
  }

  #wakeReader(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #next(): Promise<IteratorResult<WatchFrame>> {
    const ready = this.takeReady();
    if (ready !== undefined) return Promise.resolve({ done: false, value: ready });
    const ending = this.#ending;
    if (ending === undefined) {
      return new Promise((resolve) => {
        this.#wake = () => resolve(this.#next());
      });
    }
    this.close();
    if (!ending.failure) return Promise.resolve({ done: true, value: undefined });
    if (this.#signal.aborted) return Promise.reject(this.#signal.reason);
    return Promise.reject(new ApiConnectionError('WATCH', ending.error));
  }

  /** The reader took every frame: the queue starts over and a paused body flows again. */
  #emptied(): void {
    this.#frames = [];
    this.#taken = 0;
    this.#unreadBytes = 0;
    if (this.#paused && !this.#ending) {
      this.#paused = false;
      this.#body.resume();
    }
  }
}
