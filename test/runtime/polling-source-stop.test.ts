/**
 * A polling source that yields only when something changed spends nearly all its life inside an
 * `await`, where `return()` cannot reach an async generator. With the stream's signal passed to
 * that wait, `stop()` ends the poll: the generator's `finally` runs, no timer is left, and a
 * process running such a loop exits by itself (issue 39: before, it polled for ever).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ReconcileLoop, type SourceEvent } from '../../src/index.js';
import { FakeClock } from '../support/fake-clock.js';
import { finishes, until } from '../support/until.js';

interface Job {
  name: string;
  queue: string;
}

const POLL_INTERVAL_MS = 500;

const loops: ReconcileLoop<Job>[] = [];
afterEach(async () => {
  for (const loop of loops.splice(0)) await loop.stop().catch(() => {});
});

/** A source that polls `read()` every interval and yields a replace only when it changed. */
function pollingSource(
  clock: FakeClock,
  read: () => Job[],
  polls: { count: number; finallyRan: boolean },
) {
  return async function* (signal: AbortSignal): AsyncGenerator<SourceEvent<Job>> {
    try {
      let last = '';
      for (;;) {
        polls.count += 1;
        const jobs = read();
        const seen = JSON.stringify(jobs);
        if (seen !== last) {
          last = seen;
          yield { type: 'replace', objects: new Map(jobs.map((job) => [job.name, job])) };
        }
        await clock.sleep(POLL_INTERVAL_MS, signal);
      }
    } finally {
      polls.finallyRan = true;
    }
  };
}

describe('a polling source under ReconcileLoop.stop()', () => {
  it('stops polling, runs its finally and leaves no timer once stop() resolved', async () => {
    const clock = new FakeClock();
    const polls = { count: 0, finallyRan: false };
    let jobs: Job[] = [{ name: 'j1', queue: 'ci' }];
    const reconciled: string[] = [];
    const loop = new ReconcileLoop<Job>({
      source: pollingSource(clock, () => jobs, polls),
      keyMap: (job) => job.queue,
      reconcile: async (queue) => {
        reconciled.push(`${queue}:${loop.getByParent(queue).length}`);
      },
      resyncPeriodMs: null,
      clock,
    });
    loops.push(loop);
    await loop.start();
    jobs = [...jobs, { name: 'j2', queue: 'ci' }];
    await clock.advance(POLL_INTERVAL_MS);
    await until(() => reconciled.length === 2, { what: 'the change to be reconciled' });
    expect(reconciled).toEqual(['ci:1', 'ci:2']);
    await loop.stop();
    await until(() => polls.finallyRan, { what: 'the polling generator’s finally' });
    const pollsAtStop = polls.count;
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10 * POLL_INTERVAL_MS);
    expect(polls.count).toBe(pollsAtStop);
  });

  it('lets a process running such a loop exit on its own after stop()', async () => {
    const child = spawn(
      process.execPath,
      [
        fileURLToPath(new URL('fixtures/polling-source-child.mjs', import.meta.url)),
        // `npm test` builds first: the child runs the shipped JavaScript.
        new URL('../../dist/src/index.js', import.meta.url).href,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let code: number | null;
    try {
      // A process that polls for ever never closes: the wait fails naming what it waited for.
      code = await finishes(exited, {
        what: 'the child process to exit by itself',
        withinMs: 10_000,
      });
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout.trim().split('\n').sort()).toEqual(['poll finally ran', 'stop() resolved']);
  });
});
