/**
 * Knows whether the current async context is inside a given loop's reconcile.
 *
 * Awaiting `stop()` from inside `reconcile` would wait for that very reconcile: a deadlock. The
 * loop recognises the situation through `AsyncLocalStorage`, which follows the reconcile across
 * its own `await`s, and answers with a rejection instead of hanging. A frame is marked finished
 * when its reconcile settles, so a task the reconcile left running is not mistaken for it later.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

interface ReconcileFrame {
  readonly owner: object;
  active: boolean;
}

const currentFrame = new AsyncLocalStorage<ReconcileFrame>();

/** Runs `body` as `owner`'s reconcile; the frame ends when the returned promise settles. */
export async function runAsReconcile<R>(owner: object, body: () => Promise<R> | R): Promise<R> {
  const frame: ReconcileFrame = { owner, active: true };
  try {
    return await currentFrame.run(frame, body);
  } finally {
    frame.active = false;
  }
}

/** Whether the caller is (still) inside one of `owner`'s reconciles. */
export function isInsideReconcileOf(owner: object): boolean {
  const frame = currentFrame.getStore();
  return frame !== undefined && frame.owner === owner && frame.active;
}
