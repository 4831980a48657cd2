/**
 * The built command, run as a user runs it: `node dist/src/main.js` (so `npm test`, which builds
 * first, covers the shipped JavaScript). Traffic goes to loopback only.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const MAIN = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));

interface Running {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves at the command's next output (either stream) or its exit, whichever comes first. */
  nextOutput(): Promise<void>;
}

/**
 * `--shutdown-grace 0` for tests whose subject is not the grace: the 3 s default would be spent
 * waiting in every one of them. The grace itself is tested with `--shutdown-grace 1s` below.
 */
const NO_GRACE = ['--shutdown-grace', '0'];

/**
 * A story step every 100 ms instead of every 3 s, for tests that wait on the simulated service's
 * state (readiness, cells): the first change proves the watch, so the service is soon ready, and
 * each step's reconciles are logged, which is when `waitFor` looks again.
 */
const FAST_STEPS = ['--simulation-step', '100ms'];

/**
 * Ceiling of one wait on the command: a failing wait's report comes well before the runner's 20 s
 * timeout. A passing wait ends at the output it waits for, however soon.
 */
const WAIT_CEILING_MS = 15_000;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** An environment with no cluster in sight: no service host, no KUBECONFIG, an empty HOME. */
async function clusterFreeEnv(): Promise<NodeJS.ProcessEnv> {
  const home = await mkdtemp(join(tmpdir(), 'pool-controller-home-'));
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home };
  return env;
}

function run(args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const stdout: string[] = [];
  const stderr: string[] = [];
  let waiters: Array<() => void> = [];
  const wake = (): void => {
    const woken = waiters;
    waiters = [];
    for (const resolve of woken) resolve();
  };
  let hasExited = false;
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout.push(chunk);
    wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr.push(chunk);
    wake();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close', not 'exit': by then both pipes are drained, so what the test reads is complete.
    child.once('close', (code, signal) => {
      hasExited = true;
      resolve({ code, signal });
      wake();
    }),
  );
  const nextOutput = (): Promise<void> =>
    hasExited ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve));
  return { child, stdout, stderr, exited, nextOutput };
}

/** The JSON log lines so far (whole lines only: the last one may still be arriving). */
function logLines(running: Running): Array<Record<string, unknown>> {
  const lines = running.stdout.join('').split('\n');
  lines.pop();
  return lines
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * Resolves with `probe`'s first defined answer. The probe runs now and again after each piece of
 * the command's output, instead of on a timer: what it checks is a log line, or an HTTP answer
 * that changes as the service acts, and the service logs what it does (a test waiting on the
 * simulated world's state runs it with `FAST_STEPS`). Fails naming `what` when the command exits
 * first or after the ceiling.
 */
async function waitFor<T>(
  running: Running,
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
): Promise<T> {
  // A bound on a failing wait, not a sleep: a passing one ends at the output it waits for.
  const ceiling = AbortSignal.timeout(WAIT_CEILING_MS);
  const timedOut = new Promise<'ceiling'>((resolve) =>
    ceiling.addEventListener('abort', () => resolve('ceiling'), { once: true }),
  );
  for (;;) {
    // Subscribed before the probe runs, so output that arrives during it is not missed.
    const output = running.nextOutput();
    const value = await probe();
    if (value !== undefined) return value;
    if (running.child.exitCode !== null || running.child.signalCode !== null) {
      throw new Error(
        `the command exited while waiting for ${what}; stderr: ${running.stderr.join('')}`,
      );
    }
    if ((await Promise.race([output, timedOut])) === 'ceiling') {
      throw new Error(`still waiting for ${what} after ${WAIT_CEILING_MS} ms`);
    }
  }
}

/** Starts the service on an ephemeral loopback port and returns its base URL. */
async function startService(
  args: string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ running: Running; base: string }> {
  const running = run(['--listen', '127.0.0.1:0', ...args], env ?? (await clusterFreeEnv()));
  const listening = await waitFor(running, 'the listening log line', () =>
    logLines(running).find((l) => l.msg === 'control plane listening'),
  );
  const port = (listening.address as { port: number }).port;
  return { running, base: `http://127.0.0.1:${port}` };
}

beforeAll(() => {
  if (!existsSync(MAIN))
    throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`);
});

describe('pool-controller (the built command)', () => {
  it('prints --help and exits 0', async () => {
    const running = run(['--help'], await clusterFreeEnv());
    expect((await running.exited).code).toBe(0);
    expect(running.stdout.join('')).toContain('Usage: pool-controller [flags]');
    expect(running.stdout.join('')).toContain('POOL_CONTROLLER_ADMIN_TOKEN_FILE');
  });

  it("prints --version (package version, the build's revision, Node.js) and exits 0", async () => {
    const running = run(['--version'], await clusterFreeEnv());
    expect((await running.exited).code).toBe(0);
    const { version } = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    );
    const revision = JSON.parse(
      readFileSync(new URL('../../dist/build-info.json', import.meta.url), 'utf8'),
    ).revision;
    expect(running.stdout.join('')).toBe(
      `pool-controller ${version} (revision ${revision}, node ${process.version})\n`,
    );
  });

  it('exits 2 with a message naming the flag for a bad value', async () => {
    const running = run(['--listen', 'nowhere'], await clusterFreeEnv());
    expect((await running.exited).code).toBe(2);
    expect(running.stderr.join('')).toContain(
      'pool-controller: invalid --listen (POOL_CONTROLLER_LISTEN)',
    );
  });

  it('exits 2 for a label selector the API server would refuse, from the flag or the variable', async () => {
    const flag = run(['--selector', 'a=b=c'], await clusterFreeEnv());
    expect((await flag.exited).code).toBe(2);
    expect(flag.stderr.join('')).toContain(
      'pool-controller: invalid --selector (POOL_CONTROLLER_SELECTOR): expected a label selector',
    );
    const variable = run([], { ...(await clusterFreeEnv()), POOL_CONTROLLER_SELECTOR: 'app in' });
    expect((await variable.exited).code).toBe(2);
    expect(variable.stderr.join('')).toContain("expected '(' after 'in', found the end");
  });

  it('falls back to the simulation without a cluster, says so loudly, and serves changing cells', async () => {
    const { running, base } = await startService([...FAST_STEPS, ...NO_GRACE]);
    expect(running.stderr.join('')).toContain('SIMULATED SOURCE');
    expect(logLines(running).some((l) => l.level === 'warn' && l.source === 'simulated')).toBe(
      true,
    );

    const res = await fetch(`${base}/api/v1/cells`);
    expect(res.headers.get('x-pool-controller-source')).toBe('simulated');
    const first = (await res.json()) as { source: string; count: number };
    expect(first.source).toBe('simulated');
    // The story's intro ends with every cell of the initial world alive at once; later steps
    // take cells down and add a fifth, so only that moment is guaranteed.
    const initialCells = ['engine-00000', 'engine-00001', 'trainer-00000', 'trainer-00001'];
    const alive = await waitFor(running, 'every initial cell to be alive at once', async () => {
      const body = (await (await fetch(`${base}/api/v1/cells?alive=true`)).json()) as {
        cells: Array<{ id: string }>;
      };
      const ids = body.cells.map((cell) => cell.id);
      return initialCells.every((id) => ids.includes(id)) ? ids : undefined;
    });
    expect(alive).toEqual(expect.arrayContaining(initialCells));
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain(
      'controller_runtime_reconcile_total{controller="cell",result="success"}',
    );
    expect(metrics).toContain('process_cpu_seconds_total');

    running.child.kill('SIGTERM');
    const started = Date.now();
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(5_000);
    const messages = logLines(running).map((l) => l.msg);
    expect(messages).toContain('shutting down');
    expect(messages).toContain('stopped');
  });

  it('starts and answers its routes, a refused query too, without loading Ajv, @fastify/swagger or YAML', async () => {
    const hook = fileURLToPath(new URL('../support/deny-document-compilers.mjs', import.meta.url));
    const env = { ...(await clusterFreeEnv()), NODE_OPTIONS: `--import=${hook}` };
    const { running, base } = await startService([...FAST_STEPS, ...NO_GRACE], env);
    await waitFor(running, 'readiness', async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );
    expect((await fetch(`${base}/api/v1/cells`)).status).toBe(200);
    expect((await fetch(`${base}/api/v1/cells?alive=maybe`)).status).toBe(400);
    expect(await (await fetch(`${base}/metrics`)).text()).toContain('process_cpu_seconds_total');
    expect((await fetch(`${base}/`)).status).toBe(200);
    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(running.stderr.join('')).not.toContain('denied');
  });

  it('writes an --epp-endpoints-file of the alive cells and shows it in /api/v1/sinks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pool-controller-epp-'));
    const path = join(dir, 'engine.yaml');
    const { running, base } = await startService([
      '--source',
      'simulated',
      '--epp-endpoints-file',
      `engine=${path}`,
      ...FAST_STEPS,
      ...NO_GRACE,
    ]);
    const entries = await waitFor(running, 'the endpoints file with an entry', async () => {
      const text = await readFile(path, 'utf8').catch(() => undefined);
      const parsed = text === undefined ? undefined : (parse(text) as { endpoints: unknown[] });
      return parsed && parsed.endpoints.length > 0 ? parsed.endpoints : undefined;
    });
    expect(entries[0]).toMatchObject({
      namespace: expect.any(String),
      address: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/),
      port: expect.stringMatching(/^\d+$/),
      labels: { 'pool-controller.io/pool': 'engine' },
    });
    const sinks = (await (await fetch(`${base}/api/v1/sinks`)).json()) as {
      sinks: Array<{ kind: string; target: string; pool: string }>;
    };
    expect(sinks.sinks).toContainEqual(
      expect.objectContaining({ kind: 'epp-endpoints-file', target: path, pool: 'engine' }),
    );
    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
  });

  it('shuts down promptly on SIGTERM while an event-stream client is connected', async () => {
    // The stream's socket must close with the stream: kept alive, it held the server's close
    // until the shutdown timeout (exit 1, and with a Lease, no release).
    const { running, base } = await startService(['--source', 'simulated', ...NO_GRACE]);
    const stream = await fetch(`${base}/api/v1/events`);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reader = stream.body!.getReader();
    await reader.read(); // the "connected" comment: the subscription is open
    // The stream must end, whether the server finishes its response or closes the socket under
    // it (undici says "terminated"): a client reconnects after either; what must not happen is
    // a stream that holds the shutdown open.
    const draining = (async () => {
      try {
        while (!(await reader.read()).done) {
          // keep reading until the server ends the stream
        }
      } catch (error) {
        if (!(error instanceof TypeError && error.message === 'terminated')) throw error;
      }
    })();
    const started = Date.now();
    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(5_000);
    await draining;
    expect(logLines(running).map((l) => l.msg)).toContain('stopped');
  });

  it('also shuts down cleanly on SIGINT', async () => {
    const { running } = await startService(['--source', 'simulated', ...NO_GRACE]);
    running.child.kill('SIGINT');
    expect(await running.exited).toEqual({ code: 0, signal: null });
  });

  it('requires the admin token for POSTs when --admin-token-file is set', async () => {
    const env = await clusterFreeEnv();
    const tokenFile = join(env.HOME!, 'token');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(tokenFile, 'let-me-in\n');
    const { running, base } = await startService(
      ['--source', 'simulated', '--admin-token-file', tokenFile, ...FAST_STEPS, ...NO_GRACE],
      env,
    );
    await waitFor(running, 'the first sync', async () =>
      (await fetch(`${base}/readyz`)).status === 200 ? true : undefined,
    );
    expect((await fetch(`${base}/api/v1/reconcile`, { method: 'POST' })).status).toBe(401);
    const ok = await fetch(`${base}/api/v1/reconcile`, {
      method: 'POST',
      headers: { authorization: 'Bearer let-me-in' },
    });
    expect(ok.status).toBe(202);
    running.child.kill('SIGTERM');
    expect((await running.exited).code).toBe(0);
  });

  it('serves GET /flagz: each flag, where its value came from, secrets withheld', async () => {
    const env = await clusterFreeEnv();
    const tokenFile = join(env.HOME!, 'token');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(tokenFile, 'let-me-in\n');
    const { running, base } = await startService(
      ['--source', 'simulated', '--admin-token-file', tokenFile, ...FAST_STEPS, ...NO_GRACE],
      { ...env, POOL_CONTROLLER_DRIFT_INTERVAL: '30s' },
    );
    const res = await fetch(`${base}/flagz`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const body = JSON.parse(text) as {
      source: string;
      flags: Array<{ flag: string; value: unknown; from: string }>;
    };
    const of = (flag: string) => body.flags.find((f) => f.flag === flag);
    expect(body.source).toBe('simulated');
    expect(of('source')).toMatchObject({ value: 'simulated', from: 'flag' });
    expect(of('drift-interval')).toMatchObject({ value: '30s', from: 'environment' });
    expect(of('max-event-streams')).toMatchObject({ from: 'default' });
    expect(of('admin-token-file')).toMatchObject({ value: '(withheld)', from: 'flag' });
    expect(text).not.toContain(tokenFile);
    expect(text).not.toContain('let-me-in');
    running.child.kill('SIGTERM');
    expect((await running.exited).code).toBe(0);
  });

  it('exits 2 with one line on stderr when it cannot listen', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const running = run(
        ['--source', 'simulated', '--listen', `127.0.0.1:${port}`],
        await clusterFreeEnv(),
      );
      expect((await running.exited).code).toBe(2);
      expect(running.stderr.join('').trim().split('\n').at(-1)).toBe(
        `pool-controller: cannot listen on 127.0.0.1:${port} (--listen, POOL_CONTROLLER_LISTEN): the port is in use`,
      );
    } finally {
      blocker.close();
    }
  });

  it('closes kept-alive connections during shutdown and exits 0 well within the timeout', async () => {
    const { Agent, request } = await import('node:http');
    const { running, base } = await startService([
      '--source',
      'simulated',
      '--shutdown-grace',
      '1s',
      '--shutdown-timeout',
      '20s',
    ]);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        request(`${base}${path}`, { agent }, (res) => {
          res.resume();
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }),
          );
        })
          .on('error', reject)
          .end();
      });
    expect((await get('/healthz')).connection).toBe('keep-alive');
    const started = Date.now();
    running.child.kill('SIGTERM');
    // During the grace the replica still answers, says it is not ready, and closes the connection.
    const during = await waitFor(running, 'readiness to fail', async () => {
      const answer = await get('/readyz');
      return answer.status === 500 ? answer : undefined; // controller-runtime's failed check
    });
    expect(during.connection).toBe('close');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(8_000);
    agent.destroy();
  });

  it('closes the connection of a request begun before SIGTERM and answered after it, and exits 0 after the grace', async () => {
    const { connect } = await import('node:net');
    const { running, base } = await startService([
      '--source',
      'simulated',
      '--shutdown-grace',
      '1s',
      '--shutdown-timeout',
      '20s',
      // Request logs are at debug: the test waits for the request's own log line.
      '--log-level',
      'debug',
    ]);
    const { port } = new URL(base);
    const socket = connect(Number(port), '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      answer += chunk;
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // The headers now, the body after SIGTERM: the request began before shutdown.
    socket.write(
      'POST /api/v1/reconcile HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n',
    );
    await waitFor(running, 'the request to be logged', () =>
      logLines(running).find(
        (l) => l.msg === 'incoming request' && (l.req as { method?: string })?.method === 'POST',
      ),
    );
    const started = Date.now();
    running.child.kill('SIGTERM');
    await waitFor(running, 'shutdown to begin', () =>
      logLines(running).find((l) => l.msg === 'shutting down'),
    );
    socket.write('{}');
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 202 Accepted\r\n/);
    expect(answer.toLowerCase()).toContain('\r\nconnection: close\r\n');
    expect(await running.exited).toEqual({ code: 0, signal: null });
    // The grace (1 s) and the request; the 20 s timeout would mean the socket held the close.
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('logs one line saying where it listens, not one per listener', async () => {
    const { running } = await startService([
      '--source',
      'simulated',
      '--health-probe-listen',
      '127.0.0.1:0',
      ...FAST_STEPS,
      ...NO_GRACE,
    ]);
    await waitFor(running, 'readiness', () =>
      logLines(running).find((l) => l.msg === 'initial sync done; reconciling'),
    );
    const lines = logLines(running).filter((l) => /listening/i.test(String(l.msg)));
    expect(lines.map((l) => l.msg)).toEqual(['control plane listening']);
    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
  });

  it('serves the probes on --health-probe-listen as well, and nothing else there', async () => {
    const { running } = await startService([
      '--source',
      'simulated',
      '--health-probe-listen',
      '127.0.0.1:0',
      ...FAST_STEPS,
      ...NO_GRACE,
    ]);
    const listening = logLines(running).find((l) => l.msg === 'control plane listening')!;
    const { port } = listening.healthProbeAddress as { port: number };
    const probes = `http://127.0.0.1:${port}`;
    expect((await fetch(`${probes}/healthz`)).status).toBe(200);
    await waitFor(running, 'readiness', async () =>
      (await fetch(`${probes}/readyz`)).status === 200 ? true : undefined,
    );
    expect((await fetch(`${probes}/api/v1/cells`)).status).toBe(404);
    running.child.kill('SIGTERM');
    expect(await running.exited).toEqual({ code: 0, signal: null });
  });

  it('exits 2 at start for a kubeconfig that can never work, without quoting its contents', async () => {
    const env = await clusterFreeEnv();
    const { writeFile } = await import('node:fs/promises');
    const path = join(env.HOME!, 'broken-kubeconfig');
    await writeFile(
      path,
      'apiVersion: v1\nusers:\n- name: u\n  user:\n    password: hunter2-very-secret\n   token: : x\n',
    );
    const running = run(['--source', 'kubernetes', '--kubeconfig', path], env);
    expect((await running.exited).code).toBe(2);
    const output = running.stderr.join('') + running.stdout.join('');
    expect(output).toContain('pool-controller: ');
    expect(output).toContain(path);
    expect(output).not.toContain('hunter2');
  });

  it('names --kubeconfig when --source kubernetes finds no cluster', async () => {
    const running = run(['--source', 'kubernetes'], await clusterFreeEnv());
    expect((await running.exited).code).toBe(2);
    const stderr = running.stderr.join('');
    expect(stderr).toContain('no cluster configuration found');
    expect(stderr).toContain('pass --kubeconfig PATH');
  });

  it('exits 2 when KUBECONFIG names no file, instead of simulating', async () => {
    const running = run([], { ...(await clusterFreeEnv()), KUBECONFIG: '/nonexistent' });
    expect((await running.exited).code).toBe(2);
    expect(running.stderr.join('')).toContain('KUBECONFIG names no existing file (/nonexistent)');
  });
});
