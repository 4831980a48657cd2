/**
 * The EPP endpoints-file sink (`--epp-endpoints-file POOL=PATH`): keeps a file in the format of
 * llm-d's endpoint picker `file-discovery` plugin equal to the alive, routable cells of `POOL`, so
 * an EPP run without a Kubernetes watch of its own routes by the controller's cell judgement.
 *
 * The format (llm-d-router v0.10, `pkg/epp/framework/plugins/datalayer/discovery/file`): a YAML
 * (or JSON) document `endpoints: [{name, namespace, address, port, labels}]`; `address` a literal
 * IPv4 address, `port` an integer 1-65535 written as a string, `name` unique within the file, the
 * whole file at most 1 MiB; the plugin watches it with fsnotify and handles an atomic rename. One
 * entry per cell, for its leader's address; labels name the pool and the cell (and `llm-d.ai/role`
 * for a prefill or decode pool, the label llm-d's prefill/decode filters read).
 *
 * Each entry is written on one line as a YAML flow mapping whose text is JSON, so the file is
 * YAML as the plugin documents it and this sink reads its own file back with `JSON.parse` per line.
 * Every apply reads the file (bounded to 1 MiB), renders the desired text, and writes only when
 * they differ: into a temporary file in the same directory, synced, then renamed over the target
 * (a reader sees the old file or the new one, never half of one). A rendering over 1 MiB is not
 * written (the plugin would refuse it): the target fails with the reason and keeps its old file.
 *
 * Guard rails as the other sinks: a pool in panic keeps the entries its file lists (new ones are
 * added); observe mode reads and reports what would change, never writes; a failed read or write
 * holds the file by its own backoff. An IPv6 cell cannot be written (the plugin takes IPv4 only):
 * it is left out, logged once, and named in the target's `lastError` while it is desired.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { describeThrown } from '../coordination/pipeline.js';
import { parseIp } from '../pools/endpoint-address.js';
import type { PoolRouting, RoutingState } from '../pools/routing-state.js';
import { abortReason } from '../runtime/clock.js';
import { type Sink, SinkApplyError, type SinkFailure, type SinkTargetStatus } from './sink.js';
import {
  newPanicTargetRecord,
  type PanicTargetRecord,
  type SinkBaseOptions,
  SinkContext,
} from './sink-context.js';

/** This sink's `SinkKind`: its `kind`, the `sink` label of its metrics, the `kind` of its events. */
const EPP_ENDPOINTS_FILE_SINK = 'epp-endpoints-file' as const;
/** The file-discovery plugin refuses a larger file (`maxEndpointsFileSize`, 1 MiB). */
export const EPP_ENDPOINTS_FILE_MAX_BYTES = 1024 * 1024;
/** The label naming an entry's pool. */
const EPP_POOL_LABEL = 'pool-controller.io/pool';
/** The label naming an entry's cell. */
const EPP_CELL_LABEL = 'pool-controller.io/cell';
/** The label llm-d's prefill/decode filters select by (`prefill` or `decode`). */
const EPP_ROLE_LABEL = 'llm-d.ai/role';
/** The first line of every file this sink writes. */
const HEADER = '# Written by pool-controller (--epp-endpoints-file): every change replaces it.';

/** A prefill/decode pool's role, labelled on each of its entries. */
type EppRole = 'prefill' | 'decode';

/** One `--epp-endpoints-file POOL=PATH[,role=prefill|decode]`. */
export interface EppEndpointsFileTarget {
  pool: string;
  /** Absolute path of the file; its directory must exist (a shared volume with the EPP). */
  path: string;
  role?: EppRole;
}

/** One entry of the file, as the plugin reads it. */
interface EppEndpoint {
  name: string;
  namespace: string;
  address: string;
  port: string;
  labels: Record<string, string>;
}

/** `read` and `write` of a file, for `pool_controller_sink_operations_total`. */
export interface EppOperationRecord {
  sink: typeof EPP_ENDPOINTS_FILE_SINK;
  target: string;
  operation: 'read' | 'write';
  result: 'success' | 'error';
}

/** What the sink is built from: its files, and the options every sink takes. */
export interface EppEndpointsFileSinkOptions extends SinkBaseOptions<EppOperationRecord> {
  targets: readonly EppEndpointsFileTarget[];
}

interface TargetState extends PanicTargetRecord {
  readonly path: string;
  readonly role: EppRole | undefined;
  /** IPv6 endpoints left out, already logged (each once while it stays desired). */
  readonly loggedIpv6: Set<string>;
}

/**
 * The file's text for `entries` (sorted by namespace, then name): a header comment, then one
 * flow-mapping line per entry.
 */
function renderEppEndpointsFile(entries: readonly EppEndpoint[]): string {
  if (entries.length === 0) return `${HEADER}\nendpoints: []\n`;
  const lines = entries.map((entry) => `  - ${JSON.stringify(entry)}`);
  return `${HEADER}\nendpoints:\n${lines.join('\n')}\n`;
}

/**
 * The entries of a file this sink wrote (see `renderEppEndpointsFile`); `undefined` when the text
 * is not in that form (another writer's file: it is replaced on the next write).
 */
export function readEppEndpointsFile(text: string): EppEndpoint[] | undefined {
  const lines = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
  if (lines[0] === 'endpoints: []' && lines.length === 1) return [];
  if (lines[0] !== 'endpoints:') return undefined;
  const entries: EppEndpoint[] = [];
  for (const line of lines.slice(1)) {
    if (!line.startsWith('  - {')) return undefined;
    try {
      const value = JSON.parse(line.slice(4)) as EppEndpoint;
      if (typeof value.address !== 'string' || typeof value.port !== 'string') return undefined;
      entries.push(value);
    } catch {
      return undefined;
    }
  }
  return entries;
}

/** `address:port` of an entry: how `desired` and `actual` name it. */
function endpointOf(entry: EppEndpoint): string {
  return `${entry.address}:${entry.port}`;
}

/**
 * The desired entries of `target` (every namespace's pool of its name), the IPv6 endpoints that
 * cannot be written, and whether a pool of that name is in panic.
 */
function desiredEntries(
  pools: readonly PoolRouting[],
  target: TargetState,
): { entries: EppEndpoint[]; ipv6: string[]; panic: boolean } {
  const entries: EppEndpoint[] = [];
  const ipv6: string[] = [];
  let panic = false;
  for (const routing of pools) {
    if (routing.pool !== target.pool) continue;
    if (routing.capacity?.panic) panic = true;
    for (const cell of routing.cells) {
      const colon = cell.address.lastIndexOf(':');
      const host = cell.address.slice(0, colon).replace(/^\[|\]$/g, '');
      const port = cell.address.slice(colon + 1);
      if (parseIp(host)?.family !== 'IPv4') {
        ipv6.push(cell.address);
        continue;
      }
      const labels: Record<string, string> = {
        [EPP_POOL_LABEL]: routing.pool,
        [EPP_CELL_LABEL]: cell.cell,
      };
      if (target.role) labels[EPP_ROLE_LABEL] = target.role;
      entries.push({ name: cell.cell, namespace: routing.namespace, address: host, port, labels });
    }
  }
  return { entries: sortEntries(entries), ipv6: ipv6.sort(), panic };
}

function sortEntries(entries: EppEndpoint[]): EppEndpoint[] {
  return entries.sort(
    (a, b) =>
      a.namespace.localeCompare(b.namespace) ||
      a.name.localeCompare(b.name) ||
      endpointOf(a).localeCompare(endpointOf(b)),
  );
}

/**
 * The `Sink` that keeps llm-d EPP endpoints files equal to their pools' alive cells (see the
 * module comment). It keeps per file only what it logged; the file itself is the actual state.
 */
export class EppEndpointsFileSink implements Sink {
  readonly kind = EPP_ENDPOINTS_FILE_SINK;
  readonly #sink: SinkContext<EppOperationRecord>;
  readonly #targets: TargetState[];

  constructor(options: EppEndpointsFileSinkOptions) {
    this.#sink = new SinkContext(EPP_ENDPOINTS_FILE_SINK, options);
    const paths = new Set<string>();
    this.#targets = options.targets.map((target) => {
      if (paths.has(target.path)) {
        throw new TypeError(`endpoints file ${target.path} is configured twice`);
      }
      paths.add(target.path);
      return {
        ...newPanicTargetRecord(target.pool),
        path: target.path,
        role: target.role,
        loggedIpv6: new Set<string>(),
      };
    });
  }

  async apply(desired: RoutingState, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortReason(signal);
    const sink = this.#sink;
    const failures: SinkFailure[] = [];
    for (const target of this.#targets) {
      if (signal.aborted) throw abortReason(signal);
      const until = sink.backoff.heldUntil(target.path);
      if (until !== undefined) {
        target.desired = desiredEntries(desired.pools, target).entries.map(endpointOf).sort();
        failures.push(sink.heldFailure(target.path, target.pool, until, target.lastError));
        continue;
      }
      try {
        await this.#applyTarget(target, desired);
        sink.backoff.succeeded(target.path);
      } catch (error) {
        if (signal.aborted) throw abortReason(signal);
        sink.backoff.failed(target.path);
        const failure = sink.failure(target.path, target.pool, describeThrown(error));
        target.lastError = failure.error;
        failures.push(failure);
        sink.logger.warn(
          { sink: this.kind, target: target.path, pool: target.pool, error: failure.error },
          'epp endpoints file sink: apply failed for this file; it is not tried again before its backoff ends',
        );
        sink.publish(failure);
      }
    }
    if (failures.length > 0) throw new SinkApplyError(failures);
  }

  nextAttemptAtMs(): number | undefined {
    return this.#sink.backoff.nextAttemptAtMs();
  }

  status(): SinkTargetStatus[] {
    return this.#targets.map((target) =>
      this.#sink.status(target.path, target, {
        ...(target.role ? { role: target.role } : {}),
        pending: [],
        backoffUntil: this.#sink.backoffUntil(target.path),
        panic: target.panic,
        heldByPanic: target.heldByPanic,
        // The file is the sink's alone: every entry it does not desire goes.
        ownership: { mode: 'all', by: null },
      }),
    );
  }

  /** One file: read, render, write when different (in apply mode). */
  async #applyTarget(target: TargetState, state: RoutingState): Promise<void> {
    const sink = this.#sink;
    const { entries, ipv6, panic } = desiredEntries(state.pools, target);
    target.desired = entries.map(endpointOf).sort();
    target.panic = panic;
    this.#logIpv6(target, ipv6);

    const text = await sink.call(target.path, 'read', () => readBounded(target.path));
    const listed = text === undefined ? [] : (readEppEndpointsFile(text) ?? []);
    target.actual = listed.map(endpointOf).sort();

    // In panic an entry the file lists and nothing desires stays.
    const desiredNames = new Set(entries.map((e) => `${e.namespace}/${e.name}`));
    const held = panic ? listed.filter((e) => !desiredNames.has(`${e.namespace}/${e.name}`)) : [];
    target.heldByPanic = held.map(endpointOf).sort();
    const next = renderEppEndpointsFile(sortEntries([...entries, ...held]));
    const wanted = new Set([...entries, ...held].map(endpointOf));
    const actualSet = new Set(target.actual);
    const wouldAdd = [...wanted].filter((e) => !actualSet.has(e)).sort();
    const wouldRemove = target.actual.filter((e) => !wanted.has(e));

    if (sink.mode === 'observe') {
      target.wouldAdd = wouldAdd;
      target.wouldRemove = wouldRemove;
      sink.observed.report(target.path, target.pool, wouldAdd, wouldRemove);
    } else if (next !== text) {
      const bytes = Buffer.byteLength(next);
      if (bytes > EPP_ENDPOINTS_FILE_MAX_BYTES) {
        throw new Error(
          `the file would be ${bytes} bytes, over the endpoint picker's 1 MiB limit; not written (the old file stays)`,
        );
      }
      await sink.call(target.path, 'write', () => writeAtomically(target.path, next));
      target.actual = [...wanted].sort();
      sink.logger.info(
        {
          sink: this.kind,
          target: target.path,
          pool: target.pool,
          added: wouldAdd,
          removed: wouldRemove,
        },
        'epp endpoints file sink: file written',
      );
      sink.publish({
        type: 'sink.applied',
        kind: this.kind,
        target: target.path,
        pool: target.pool,
        added: wouldAdd,
        removed: wouldRemove,
      });
    }
    target.lastAppliedAt = sink.nowIso();
    target.lastError =
      ipv6.length === 0
        ? null
        : `left out: ${ipv6.join(', ')} (the endpoint picker's file discovery takes IPv4 addresses only)`;
  }

  /** Each IPv6 endpoint left out is logged once while it stays desired. */
  #logIpv6(target: TargetState, ipv6: readonly string[]): void {
    const now = new Set(ipv6);
    for (const address of [...target.loggedIpv6]) {
      if (!now.has(address)) target.loggedIpv6.delete(address);
    }
    for (const address of ipv6) {
      if (target.loggedIpv6.has(address)) continue;
      target.loggedIpv6.add(address);
      this.#sink.logger.warn(
        { sink: this.kind, target: target.path, pool: target.pool, address },
        "epp endpoints file sink: an IPv6 cell is left out: the endpoint picker's file discovery takes IPv4 addresses only",
      );
    }
  }
}

/** The file's text, at most 1 MiB of it (more cannot be ours); `undefined` when it does not exist. */
async function readBounded(path: string): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const buffer = Buffer.alloc(EPP_ENDPOINTS_FILE_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) break;
    }
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** Writes `text` to a temporary file beside `path`, syncs it, and renames it over `path`. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temporary = join(
    dirname(path),
    `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    const handle = await open(temporary, 'wx', 0o644);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => {});
    throw error;
  }
}
