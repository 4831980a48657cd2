/**
 * The EPP endpoints-file sink (issue 41, item 1), proven against the documented format of llm-d's
 * file-discovery plugin (llm-d-router v0.10: `endpoints: [{name, namespace, address, port,
 * labels}]`, IPv4 address, port a string 1-65535, names unique, at most 1 MiB) by parsing what it
 * writes with a YAML parser and validating it as the plugin's loader does. The real EPP is not
 * built here: the Go module proxy this project builds its e2e tools through answers 403 for
 * github.com/llm-d/llm-d-inference-scheduler (the module the plugin lives in).
 */
import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { PoolRouting, RoutingState } from '../../src/pools/routing-state.js';
import {
  EPP_ENDPOINTS_FILE_MAX_BYTES,
  EppEndpointsFileSink,
  type EppEndpointsFileSinkOptions,
  type EppOperationRecord,
  readEppEndpointsFile,
} from '../../src/sinks/epp-endpoints-file.js';
import { SinkApplyError, type SinkEvent } from '../../src/sinks/sink.js';
import { FakeClock } from '../support/fake-clock.js';
import { RecordingLogger } from '../support/recording-logger.js';

const signal = (): AbortSignal => new AbortController().signal;

/** Pool `engine`'s cells at these addresses in `inference`, optionally in panic. */
function state(
  addresses: string[],
  options: { panic?: boolean; namespace?: string; byAddress?: boolean } = {},
) {
  const pool: PoolRouting = {
    namespace: options.namespace ?? 'inference',
    pool: 'engine',
    cells: addresses.map((address, i) => ({
      cell: options.byAddress
        ? `engine-${address.split(':')[0]?.split('.')[3]}`
        : `engine-${String(i).padStart(5, '0')}`,
      generation: 'g1',
      address,
    })),
  };
  if (options.panic !== undefined) {
    pool.capacity = {
      routable: addresses.length,
      known: 10,
      thresholdPercent: 50,
      panic: options.panic,
    };
  }
  return { pools: [pool] } satisfies RoutingState;
}

async function setup(extra: Partial<EppEndpointsFileSinkOptions> = {}, role?: 'prefill') {
  const dir = await mkdtemp(join(tmpdir(), 'epp-sink-'));
  const path = join(dir, 'endpoints.yaml');
  const events: SinkEvent[] = [];
  const operations: EppOperationRecord[] = [];
  const logger = new RecordingLogger();
  const sink = new EppEndpointsFileSink({
    targets: [{ pool: 'engine', path, ...(role ? { role } : {}) }],
    clock: new FakeClock(),
    wallClock: () => new Date('2026-01-02T03:04:05.000Z'),
    logger,
    publish: (event) => events.push(event),
    onOperation: (record) => operations.push(record),
    ...extra,
  });
  return { dir, path, sink, events, operations, logger };
}

interface PluginEntry {
  name: string;
  namespace?: string;
  address: string;
  port: string;
  labels?: Record<string, string>;
}

/** The file read as the plugin reads it (YAML → endpoints), with its validation rules. */
async function readAsPlugin(path: string): Promise<PluginEntry[]> {
  const text = await readFile(path, 'utf8');
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(EPP_ENDPOINTS_FILE_MAX_BYTES);
  const document = parse(text) as { endpoints: PluginEntry[] };
  const names = new Set<string>();
  for (const entry of document.endpoints) {
    expect(isIPv4(entry.address), entry.address).toBe(true);
    expect(typeof entry.port).toBe('string');
    expect(Number(entry.port)).toBeGreaterThanOrEqual(1);
    expect(Number(entry.port)).toBeLessThanOrEqual(65535);
    const key = `${entry.namespace ?? 'default'}/${entry.name}`;
    expect(names.has(key), key).toBe(false);
    names.add(key);
  }
  return document.endpoints;
}

const writes = (operations: EppOperationRecord[]): number =>
  operations.filter((o) => o.operation === 'write').length;

describe('EppEndpointsFileSink', () => {
  it("writes one entry per alive cell's leader in the file-discovery plugin's format", async () => {
    const { path, sink, events } = await setup();
    await sink.apply(state(['10.0.0.2:8000', '10.0.0.1:8000']), signal());
    expect(await readAsPlugin(path)).toEqual([
      {
        name: 'engine-00000',
        namespace: 'inference',
        address: '10.0.0.2',
        port: '8000',
        labels: { 'pool-controller.io/pool': 'engine', 'pool-controller.io/cell': 'engine-00000' },
      },
      {
        name: 'engine-00001',
        namespace: 'inference',
        address: '10.0.0.1',
        port: '8000',
        labels: { 'pool-controller.io/pool': 'engine', 'pool-controller.io/cell': 'engine-00001' },
      },
    ]);
    expect(events).toEqual([
      {
        type: 'sink.applied',
        kind: 'epp-endpoints-file',
        target: path,
        pool: 'engine',
        added: ['10.0.0.1:8000', '10.0.0.2:8000'],
        removed: [],
      },
    ]);
    expect(sink.status()).toMatchObject([
      {
        kind: 'epp-endpoints-file',
        target: path,
        pool: 'engine',
        desired: ['10.0.0.1:8000', '10.0.0.2:8000'],
        actual: ['10.0.0.1:8000', '10.0.0.2:8000'],
        lastError: null,
        ownership: { mode: 'all', by: null },
      },
    ]);
  });

  it('writes an empty list when the pool has no alive cell', async () => {
    const { path, sink } = await setup();
    await sink.apply({ pools: [] }, signal());
    expect(await readAsPlugin(path)).toEqual([]);
  });

  it('labels a prefill pool with llm-d.ai/role', async () => {
    const { path, sink } = await setup({}, 'prefill');
    await sink.apply(state(['10.0.0.1:8000']), signal());
    expect((await readAsPlugin(path))[0]?.labels?.['llm-d.ai/role']).toBe('prefill');
  });

  it('writes only on change, each time by renaming a whole new file over the old', async () => {
    const { dir, path, sink, operations } = await setup();
    await sink.apply(state(['10.0.0.1:8000']), signal());
    const first = await stat(path);
    await sink.apply(state(['10.0.0.1:8000']), signal());
    await sink.apply(state(['10.0.0.1:8000']), signal());
    expect(writes(operations)).toBe(1);
    expect((await stat(path)).ino).toBe(first.ino);

    await sink.apply(state(['10.0.0.1:8000', '10.0.0.3:8000']), signal());
    expect(writes(operations)).toBe(2);
    // A rename, not a rewrite in place: a reader sees the old file or the new one.
    expect((await stat(path)).ino).not.toBe(first.ino);
    expect(await readdir(dir)).toEqual(['endpoints.yaml']);
  });

  it('replaces a file someone else wrote, and reads its own back after a restart', async () => {
    const { path, sink, operations } = await setup();
    await writeFile(path, 'endpoints:\n  - name: stray\n    address: "10.9.9.9"\n    port: "1"\n');
    await sink.apply(state(['10.0.0.1:8000']), signal());
    expect((await readAsPlugin(path)).map((e) => e.address)).toEqual(['10.0.0.1']);
    const restarted = new EppEndpointsFileSink({
      targets: [{ pool: 'engine', path }],
      clock: new FakeClock(),
      onOperation: (record) => operations.push(record),
    });
    await restarted.apply(state(['10.0.0.1:8000']), signal());
    expect(writes(operations)).toBe(1);
    expect(restarted.status()[0]?.actual).toEqual(['10.0.0.1:8000']);
  });

  it('leaves an IPv6 cell out, names it in lastError and logs it once', async () => {
    const { path, sink, logger } = await setup();
    await sink.apply(state(['10.0.0.1:8000', '[fd00::1]:8000']), signal());
    await sink.apply(state(['10.0.0.1:8000', '[fd00::1]:8000']), signal());
    expect((await readAsPlugin(path)).map((e) => e.address)).toEqual(['10.0.0.1']);
    expect(sink.status()[0]?.lastError).toBe(
      "left out: [fd00::1]:8000 (the endpoint picker's file discovery takes IPv4 addresses only)",
    );
    expect(logger.mentioning('[fd00::1]:8000', 'warn')).toHaveLength(1);
    await sink.apply(state(['10.0.0.1:8000']), signal());
    expect(sink.status()[0]?.lastError).toBeNull();
  });

  it('keeps listed entries while the pool is in panic, and removes them once it is out', async () => {
    const { path, sink } = await setup();
    await sink.apply(state(['10.0.0.1:8000', '10.0.0.2:8000'], { byAddress: true }), signal());
    await sink.apply(state(['10.0.0.1:8000'], { panic: true, byAddress: true }), signal());
    expect((await readAsPlugin(path)).map((e) => e.address)).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(sink.status()[0]).toMatchObject({ panic: true, heldByPanic: ['10.0.0.2:8000'] });
    // Panic still adds.
    await sink.apply(
      state(['10.0.0.1:8000', '10.0.0.3:8000'], { panic: true, byAddress: true }),
      signal(),
    );
    expect((await readAsPlugin(path)).map((e) => e.address).sort()).toEqual([
      '10.0.0.1',
      '10.0.0.2',
      '10.0.0.3',
    ]);
    await sink.apply(state(['10.0.0.1:8000'], { panic: false, byAddress: true }), signal());
    expect((await readAsPlugin(path)).map((e) => e.address)).toEqual(['10.0.0.1']);
  });

  it('in observe mode reads the file, reports what would change and never writes', async () => {
    const { path, sink, events, operations } = await setup({ mode: 'observe' });
    await sink.apply(state(['10.0.0.1:8000']), signal());
    await expect(stat(path)).rejects.toThrow(/ENOENT/);
    expect(writes(operations)).toBe(0);
    expect(sink.status()[0]).toMatchObject({ wouldAdd: ['10.0.0.1:8000'], wouldRemove: [] });
    expect(events.map((e) => e.type)).toEqual(['sink.observed']);
  });

  it('refuses a file over 1 MiB and keeps the old one', async () => {
    const { path, sink } = await setup();
    await sink.apply(state(['10.0.0.1:8000']), signal());
    const before = await readFile(path, 'utf8');
    const many = Array.from({ length: 8_000 }, (_, i) => `10.1.${i >> 8}.${i & 255}:8000`);
    const error = await sink.apply(state(many), signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SinkApplyError);
    expect((error as SinkApplyError).failures[0]?.error).toMatch(
      /^the file would be \d+ bytes, over the endpoint picker's 1 MiB limit; not written/,
    );
    expect(await readFile(path, 'utf8')).toBe(before);
  });

  it('holds a file it cannot write by its own backoff, and names the error', async () => {
    const { dir, sink } = await setup();
    const blocked = new EppEndpointsFileSink({
      targets: [{ pool: 'engine', path: join(dir, 'missing', 'endpoints.yaml') }],
      clock: new FakeClock(),
    });
    const error = await blocked.apply(state(['10.0.0.1:8000']), signal()).catch((e) => e);
    expect(error).toBeInstanceOf(SinkApplyError);
    expect(blocked.nextAttemptAtMs()).toBe(1_000);
    expect(blocked.status()[0]?.lastError).toMatch(/ENOENT/);
    await mkdir(join(dir, 'missing'));
    expect(sink.status()[0]?.lastError).toBeNull();
  });

  it('reads back only files in its own form', () => {
    expect(readEppEndpointsFile('endpoints: []\n')).toEqual([]);
    expect(readEppEndpointsFile('endpoints:\n  - name: a\n')).toBeUndefined();
    expect(readEppEndpointsFile('')).toBeUndefined();
  });
});
