/**
 * Waiting for a condition instead of counting event-loop turns. A test that waits a fixed number
 * of turns depends on how many hops the code under test makes, so it breaks when an `await` is
 * added and can pass while the thing it checks never happened. These helpers re-check after every
 * macrotask turn (so promise chains, `setImmediate` callbacks and loopback I/O all get to run) and
 * give up with a message that names what was awaited, so a wrong expectation fails the test
 * quickly and clearly instead of hanging until the runner's timeout.
 *
 * For "nothing happened" assertions, wait for a positive signal that the code finished its step
 * (a recorded call, a resolved promise, an idle state, a fake-clock step) and then assert.
 */

/** How long a wait may last before it fails. */
export interface WaitBound {
  /**
   * Wall-clock ceiling. Generous on purpose: a passing wait ends as soon as its condition holds
   * (usually within a few turns), and the ceiling only decides how fast a failing test reports;
   * it stays well under the runner's 20 s test timeout so the waiter's own message is the one
   * seen, and above the longest honest wait in the suite (a service reconciling a relist of
   * thousands of cells on a loaded two-core machine).
   */
  withinMs?: number;
}

/** Default ceiling for a wait; see `WaitBound.withinMs`. */
export const DEFAULT_WAIT_MS = 5_000;

function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Resolves once `condition()` returns true, checking it after each macrotask turn. The first
 * check comes after one turn, never synchronously: a promise the test just resolved has not
 * reached its callbacks yet, and a condition such as "nothing is in progress" would otherwise
 * hold before the code under test saw the change. Rejects naming `what` when it is still false
 * after the bound.
 */
export async function until(
  condition: () => boolean,
  options: WaitBound & { what: string },
): Promise<void> {
  const deadline = Date.now() + (options.withinMs ?? DEFAULT_WAIT_MS);
  let turns = 0;
  for (;;) {
    await nextTurn();
    turns += 1;
    if (condition()) return;
    if (Date.now() >= deadline) {
      throw new Error(`until: still waiting for ${options.what} after ${turns} turns`);
    }
  }
}

/**
 * `until` for a condition that must itself be awaited (a request to the app under test): checked
 * after each turn, failing naming `what` after the bound.
 */
export async function untilAsync(
  condition: () => Promise<boolean>,
  options: WaitBound & { what: string },
): Promise<void> {
  const deadline = Date.now() + (options.withinMs ?? DEFAULT_WAIT_MS);
  let turns = 0;
  for (;;) {
    await nextTurn();
    turns += 1;
    if (await condition()) return;
    if (Date.now() >= deadline) {
      throw new Error(`untilAsync: still waiting for ${options.what} after ${turns} turns`);
    }
  }
}

/**
 * Re-runs `assertion` (a block of `expect` calls) after each macrotask turn until it stops
 * throwing; rethrows its last failure once the bound is spent, so the report is the assertion's
 * own message.
 */
export async function eventually(assertion: () => void, options: WaitBound = {}): Promise<void> {
  const deadline = Date.now() + (options.withinMs ?? DEFAULT_WAIT_MS);
  for (;;) {
    try {
      assertion();
      return;
    } catch (error) {
      if (Date.now() >= deadline) throw error;
    }
    await nextTurn();
  }
}

/**
 * Awaits `promise` but fails naming `what` when it has not settled within the bound: teardown
 * that awaits a `stop()` this way fails the test when the stop hangs, instead of hanging the run
 * or hiding the hang.
 */
export async function finishes<T>(
  promise: Promise<T>,
  options: WaitBound & { what: string },
): Promise<T> {
  let settled = false;
  const observed = promise.finally(() => {
    settled = true;
  });
  // The rejection, if any, is delivered by `await observed` below.
  observed.catch(() => {});
  await until(() => settled, { ...options, what: `${options.what} to settle` });
  return observed;
}
