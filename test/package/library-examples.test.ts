/**
 * docs/library.md's examples, built (`npm test` builds first) and run in plain Node as a user runs
 * them. The polling one reconciles what a loopback endpoint serves, exits by itself once stopped,
 * and against a server that does not answer raises the no-logger warning once and gives up after
 * `syncTimeoutMs`, saying why (issue 39); the watching one follows a directory and exits by itself
 * when its `await using` block ends.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningChild, startNodeChild } from '../support/running-child.js';
import { finishes, until } from '../support/until.js';

const POLLING = fileURLToPath(new URL('../../dist/examples/polling-source.js', import.meta.url));
const WATCHING = fileURLToPath(new URL('../../dist/examples/watching-source.js', import.meta.url));
/** The example's own `SYNC_TIMEOUT_MS`. */
const SYNC_TIMEOUT_MS = 5_000;
/** A child's start and exit on a loaded two-core machine, on top of what it waits for itself. */
const SLACK_MS = 10_000;

const children: ChildProcess[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function runExample(example: string, argument: string): RunningChild {
  const running = startNodeChild([example, argument]);
  children.push(running.child);
  return running;
}

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/jobs`;
}

describe('the polling example', () => {
  it('reconciles what the endpoint serves, follows a change, and exits by itself once stopped', async () => {
    let jobs = [
      { name: 'build-1', queue: 'ci', state: 'running' },
      { name: 'nightly-1', queue: 'nightly', state: 'queued' },
    ];
    const url = await listen(
      createServer((_request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(jobs));
      }),
    );
    const run = runExample(POLLING, url);
    const wait = { withinMs: SLACK_MS };
    await until(() => run.stdout().includes('nightly: nightly-1=queued'), {
      ...wait,
      what: 'the first reconciles',
    });
    jobs = [{ name: 'build-1', queue: 'ci', state: 'done' }];
    await until(() => run.stdout().includes('nightly: (no jobs)'), {
      ...wait,
      what: 'the change to be polled and reconciled',
    });
    run.child.kill('SIGTERM');
    const code = await finishes(run.exited, { ...wait, what: 'the example to exit by itself' });
    expect({ code, stderr: run.stderr() }).toEqual({ code: 0, stderr: '' });
    const lines = run.stdout().trim().split('\n');
    // The first reconciles may run before start()'s caller prints: the worker starts at once.
    expect(lines.slice(0, 3).sort()).toEqual([
      'ci: build-1=running',
      'nightly: nightly-1=queued',
      `synced from ${url}`,
    ]);
    expect(lines.slice(3).sort()).toEqual(['ci: build-1=done', 'nightly: (no jobs)', 'stopped']);
  });

  it('against a server that refuses connections, warns once and gives up after syncTimeoutMs with the reason', async () => {
    // A port that was free a moment ago and now has no listener: every poll is refused.
    const probe = createServer();
    const url = await listen(probe);
    await new Promise((resolve) => probe.close(resolve));
    servers.splice(servers.indexOf(probe), 1);

    const startedAt = performance.now();
    const run = runExample(POLLING, url);
    const code = await finishes(run.exited, {
      withinMs: SYNC_TIMEOUT_MS + SLACK_MS,
      what: 'the example to give up',
    });
    const elapsedMs = performance.now() - startedAt;
    expect(code).toBe(1);
    expect(elapsedMs).toBeGreaterThanOrEqual(SYNC_TIMEOUT_MS);
    const stderr = run.stderr();
    expect(stderr.match(/POOL_CONTROLLER_NO_LOGGER/g)).toHaveLength(1);
    expect(stderr).toMatch(/\[POOL_CONTROLLER_NO_LOGGER\] Warning: .*ECONNREFUSED.*`logger`/);
    expect(stderr).toMatch(
      /not started: ReconcileLoop: the initial sync did not finish within 5000 ms; .*ECONNREFUSED/,
    );
    expect(run.stdout()).toBe('');
  });
});

describe('the watching example', () => {
  it('lists the directory, follows changes, and exits by itself at the end of its block', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pool-controller-jobs-'));
    const write = (file: string, job: object): void =>
      writeFileSync(join(dir, file), JSON.stringify(job));
    write('a.json', { name: 'a', queue: 'ci', state: 'running' });
    try {
      const run = runExample(WATCHING, dir);
      const wait = { withinMs: SLACK_MS };
      await until(() => run.stdout().includes('synced'), { ...wait, what: 'the initial list' });
      write('b.json', { name: 'b', queue: 'ci', state: 'queued' });
      await until(() => run.stdout().includes('ci: a=running b=queued'), {
        ...wait,
        what: 'the new file to be reconciled',
      });
      rmSync(join(dir, 'a.json'));
      await until(() => run.stdout().includes('ci: b=queued\n'), {
        ...wait,
        what: 'the removed file to be reconciled',
      });
      run.child.kill('SIGTERM');
      const code = await finishes(run.exited, { ...wait, what: 'the example to exit by itself' });
      expect({ code, stderr: run.stderr() }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout().trim().split('\n').at(-1)).toBe('stopping');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
