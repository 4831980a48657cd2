/**
 * A typed client as its users make one: `paths` types generated from openapi.yaml by
 * openapi-typescript, calls made with openapi-fetch, the program type-checked by the project's
 * `tsc` (strict) and then run against the built service (`node dist/src/main.js --source
 * simulated`) on loopback, every answer validated against the schema its status documents. So the
 * spec is checked from both sides: what a generated client may read (the compiler) and what the
 * service sends (Ajv).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiOperations, rewriteRefs, strictAjv } from '../support/openapi-document.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');

/**
 * Ceiling of each step that runs a program (generator, compiler, client, service start): a failing
 * step reports well before the test's own timeout, a passing one ends when it is done.
 */
const STEP_CEILING_MS = 30_000;

/**
 * The client program, as a user writes it against the generated `paths`: one call per GET
 * operation, path parameters taken from list answers, typed fields read from the answers. It
 * prints what it received (path, status, content type, body) as JSON for the test to validate.
 */
const CLIENT_PROGRAM = `import createClient from 'openapi-fetch';
import type { paths } from './api.js';

interface Answer {
  path: keyof paths;
  status: number;
  contentType: string | null;
  body: unknown;
}

const baseUrl = process.argv[2];
if (baseUrl === undefined) throw new Error('usage: client.mts <base URL>');
const client = createClient<paths>({ baseUrl });
const answers: Answer[] = [];

function record(
  path: keyof paths,
  result: { data?: unknown; error?: unknown; response: Response },
): void {
  answers.push({
    path,
    status: result.response.status,
    contentType: result.response.headers.get('content-type'),
    body: result.data ?? result.error ?? null,
  });
}

function first<T>(items: T[], what: string): T {
  const item = items[0];
  if (item === undefined) throw new Error(\`no \${what} in the list answer\`);
  return item;
}

/** The first check a verbose probe answer lists (\`[+]name ok\` lines): a value for {check}. */
function firstCheck(text: string | undefined, probe: string): string {
  const check = /^\\[[+-]\\](\\S+) /m.exec(text ?? '')?.[1];
  if (check === undefined) throw new Error(\`no check listed in \${probe}?verbose: \${text}\`);
  return check;
}

const healthz = await client.GET('/healthz', { params: { query: { verbose: '' } }, parseAs: 'text' });
record('/healthz', healthz);
const liveCheck = firstCheck(healthz.data, '/healthz');
record(
  '/healthz/{check}',
  await client.GET('/healthz/{check}', { params: { path: { check: liveCheck } }, parseAs: 'text' }),
);
const readyz = await client.GET('/readyz', { params: { query: { verbose: '' } }, parseAs: 'text' });
record('/readyz', readyz);
const readyCheck = firstCheck(readyz.data, '/readyz');
record(
  '/readyz/{check}',
  await client.GET('/readyz/{check}', { params: { path: { check: readyCheck } }, parseAs: 'text' }),
);
record('/metrics', await client.GET('/metrics', { parseAs: 'text' }));
record('/', await client.GET('/', { parseAs: 'text' }));

const pools = await client.GET('/api/v1/pools');
record('/api/v1/pools', pools);
const pool = first(pools.data?.pools.filter((p) => p.cells > 0) ?? [], 'pool with cells');
record(
  '/api/v1/pools/{pool}',
  await client.GET('/api/v1/pools/{pool}', {
    params: { path: { pool: pool.name }, query: { namespace: pool.namespace } },
  }),
);

const cells = await client.GET('/api/v1/cells', { params: { query: { pool: pool.name } } });
record('/api/v1/cells', cells);
const cell = first(cells.data?.cells ?? [], 'cell');
record(
  '/api/v1/cells/{cell}',
  await client.GET('/api/v1/cells/{cell}', {
    params: { path: { cell: cell.id }, query: { namespace: cell.namespace } },
  }),
);

record('/api/v1/store', await client.GET('/api/v1/store'));
record('/api/v1/queue', await client.GET('/api/v1/queue'));
record('/api/v1/reflector', await client.GET('/api/v1/reflector'));
record('/api/v1/leader', await client.GET('/api/v1/leader'));
record('/api/v1/coordinator', await client.GET('/api/v1/coordinator'));
record('/api/v1/sinks', await client.GET('/api/v1/sinks'));
record('/flagz', await client.GET('/flagz'));

// The event stream never ends: its answer is the status and type; the stream is closed at once.
const stop = new AbortController();
const events = await client.GET('/api/v1/events', { parseAs: 'stream', signal: stop.signal });
answers.push({
  path: '/api/v1/events',
  status: events.response.status,
  contentType: events.response.headers.get('content-type'),
  body: events.error ?? null,
});
stop.abort();

process.stdout.write(JSON.stringify(answers));
`;

/** What the generated client program printed for one call. */
interface Answer {
  path: string;
  status: number;
  contentType: string | null;
  body: unknown;
}

let dir = '';
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pool-controller-openapi-client-'));
  // The program resolves openapi-fetch and @types/node as an installed project would.
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: 'nodenext',
        target: 'es2023',
        types: ['node'],
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
      },
      files: ['client.mts'],
    }),
  );
  // The generator as users run it (scripts/openapi-typescript.mjs says why through a launcher).
  const generated = spawnSync(
    process.execPath,
    [
      join(ROOT, 'scripts', 'openapi-typescript.mjs'),
      join(ROOT, 'openapi.yaml'),
      '-o',
      join(dir, 'api.d.ts'),
    ],
    { encoding: 'utf8', timeout: STEP_CEILING_MS },
  );
  expect(generated.status, generated.stderr).toBe(0);
  // The generator is a step like any other: vitest's 10 s hook default is shorter than its ceiling,
  // and on a busy machine it timed out where the step itself would have passed.
}, STEP_CEILING_MS + 10_000);

afterAll(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `tsc --noEmit` (TypeScript 7, strict) over `program` as the temp project's client.mts. */
async function typeCheck(program: string): Promise<{ status: number | null; output: string }> {
  await writeFile(join(dir, 'client.mts'), program);
  const result = spawnSync(TSC, ['-p', join(dir, 'tsconfig.json')], {
    encoding: 'utf8',
    timeout: STEP_CEILING_MS,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/**
 * Starts the built service on a free loopback port with the simulated source, stepping every
 * 100 ms, and resolves with its base URL once it is listening and has reconciled a cell (so the
 * list answers have something for the path parameters).
 */
function startService(): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      MAIN,
      '--source',
      'simulated',
      '--listen',
      '127.0.0.1:0',
      '--simulation-step',
      '100ms',
      '--shutdown-grace',
      '0',
    ],
    { env: { PATH: process.env.PATH, HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    let baseUrl: string | undefined;
    const timer = setTimeout(
      () => reject(new Error(`service not ready in ${STEP_CEILING_MS} ms:\n${output}`)),
      STEP_CEILING_MS,
    );
    child.on('exit', (code) => reject(new Error(`service exited (${code}):\n${output}`)));
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const port = /"address":\{"address":"127\.0\.0\.1","family":"IPv4","port":(\d+)\}/.exec(
        output,
      )?.[1];
      if (port) baseUrl = `http://127.0.0.1:${port}`;
      if (baseUrl && /"component":"reconcile","cell":"/.test(output)) {
        clearTimeout(timer);
        resolve(baseUrl);
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
  });
}

/** Runs the type-checked client.mts (Node strips its types) against `baseUrl`. */
function runClient(
  baseUrl: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(dir, 'client.mts'), baseUrl], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('a client generated from openapi.yaml (openapi-typescript + openapi-fetch)', () => {
  it('fails to type-check a program that reads a field the spec lacks', async () => {
    const wrong = CLIENT_PROGRAM.replace(
      "const pool = first(pools.data?.pools.filter((p) => p.cells > 0) ?? [], 'pool with cells');",
      "const pool = first(pools.data?.pools.filter((p) => p.replicas > 0) ?? [], 'pool');",
    );
    expect(wrong).not.toBe(CLIENT_PROGRAM);
    const { status, output } = await typeCheck(wrong);
    expect(status).not.toBe(0);
    expect(output).toMatch(/Property 'replicas' does not exist/);
  });

  it('type-checks, calls every GET against the running service, and each answer validates', async () => {
    const checked = await typeCheck(CLIENT_PROGRAM);
    expect(checked.output).toBe('');
    expect(checked.status).toBe(0);

    const baseUrl = await startService();
    const run = await runClient(baseUrl);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const answers = JSON.parse(run.stdout) as Answer[];

    const gets = openApiOperations.filter(({ method }) => method === 'get');
    expect(answers.map(({ path }) => path).sort()).toEqual(gets.map(({ path }) => path).sort());

    const ajv = strictAjv();
    const validated: string[] = [];
    for (const answer of answers) {
      const operation = gets.find(({ path }) => path === answer.path)!.operation;
      const where = `GET ${answer.path} (${answer.status})`;
      const response = operation.responses[String(answer.status)];
      expect(response, `${where} is undocumented`).toBeDefined();
      const types = Object.keys(response!.content ?? {});
      const type = types.find((t) => answer.contentType?.startsWith(t));
      expect(type, `${where} answered ${answer.contentType}, documented ${types}`).toBeDefined();
      const schema = response!.content![type!]!.schema;
      if (type !== 'application/json' || schema === undefined) continue;
      const validate = ajv.compile(rewriteRefs(schema) as object);
      expect(validate(answer.body) ? [] : validate.errors, where).toEqual([]);
      validated.push(answer.path);
    }
    expect(validated).toEqual(
      expect.arrayContaining([
        '/api/v1/pools',
        '/api/v1/pools/{pool}',
        '/api/v1/cells',
        '/api/v1/cells/{cell}',
        '/api/v1/leader',
        '/api/v1/coordinator',
        '/api/v1/sinks',
        '/flagz',
      ]),
    );
    // Path parameters came from the lists, so nothing was asked about that does not exist.
    expect(answers.filter(({ status }) => status === 404).map(({ path }) => path)).toEqual([]);
  }, 60_000);
});
