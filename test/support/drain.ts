/**
 * Consumes an async iterable in the background, the way a driver would, so a test can push input,
 * let the stream run (`until(...)` / `clock.advance()`), and then look at what came out.
 */
export interface Drain<T> {
  readonly items: T[];
  /** What the stream threw, if it failed. */
  readonly error: unknown;
  /** The stream finished by itself (or after `close()`). */
  readonly done: boolean;
  /**
   * Resolves once `done` is true (never rejects: a failure is in `error`). For a wait on another
   * thread that may take seconds, where re-checking `done` every turn would keep a core busy.
   */
  readonly finished: Promise<void>;
  /** Calls `return()` on the iterator (even while a `next()` is pending) and waits for the loop. */
  close(): Promise<void>;
}

export function drain<T>(iterable: AsyncIterable<T>): Drain<T> {
  const iterator = iterable[Symbol.asyncIterator]();
  const items: T[] = [];
  let error: unknown;
  let done = false;
  const loop = (async () => {
    try {
      for (;;) {
        const result = await iterator.next();
        if (result.done) break;
        items.push(result.value);
      }
    } catch (caught) {
      error = caught;
    } finally {
      done = true;
    }
  })();
  return {
    items,
    get error() {
      return error;
    },
    get done() {
      return done;
    },
    finished: loop,
    async close() {
      await iterator.return?.();
      await loop;
    },
  };
}
