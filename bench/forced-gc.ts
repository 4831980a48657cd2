/**
 * V8's `gc()` for a bench process that measures heap after a full collection, without running
 * the process under `--expose-gc`.
 *
 * Why not the flag: any V8 flag that is not at its default changes V8's flag hash, and Node then
 * rejects the code cache built into its binary for every one of its own modules (116 rejections
 * in one start, `NODE_DEBUG_NATIVE=CODE_CACHE`): each is compiled from source, in every thread. A
 * worker thread took 57–75 ms to run its first line under `--expose-gc` against 31–37 ms without
 * it (Node 24.22.3, this machine), and the deployed service runs without it, so a bench under the
 * flag timed a slower start than a user's. Turned on only long enough to take the function from a
 * new context, and off again, the flag leaves the hash, and so the cache, as they were.
 * (`--max-semi-space-size` and `--max-old-space-size`, the image's flags, do not change the hash.)
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's `gc()`: each call is a full, synchronous garbage collection of this thread's heap. */
export function forcedGc(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as () => void;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
