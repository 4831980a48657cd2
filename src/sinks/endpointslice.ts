/**
 * The EndpointSlice sink: publishes each pool's alive cells as EndpointSlices of a selector-less
 * Service named `<pool><suffix>` (default suffix `-alive`, so the headless Service LeaderWorkerSet
 * creates under the pool's own name is never touched), so anything that speaks Kubernetes
 * Services (kube-proxy, DNS, a gateway) routes to exactly the alive leaders.
 *
 * Per pool, one slice per port and address family (a slice has one port list and one
 * addressType), named `<pool><suffix>-<port>` (`…-<port>-ipv6` for IPv6; hashed down to 63
 * characters when longer) and labelled `kubernetes.io/service-name: <pool><suffix>` and
 * `endpointslice.kubernetes.io/managed-by: pool-controller`.
 *
 * The controller OWNS the slices carrying that managed-by label in the namespaces it lists (the
 * watched namespace, or all): every apply lists them, applies (server-side, forced) the ones that
 * differ from the desired state, and deletes the ones no pool or port wants any more. Equal
 * slices are not written, so an unchanged world costs one LIST per namespace.
 *
 * A pool in panic (`--sink-panic-threshold`) keeps every endpoint its slices list (new ones are
 * still added) and none of its slices is deleted. In observe mode (`--sink-mode observe`) the
 * slices are listed and nothing is written: what would be added and removed is reported.
 *
 * The API server refuses loopback, link-local and unspecified addresses in a slice (422): such
 * endpoints are left out, logged once when they appear, and named in the slice's `lastError` for
 * as long as they are desired. Hostnames (not IPs) are left out the same way.
 *
 * Size: one sink's apply (slices per port and family, naming, server-side apply, deletes, guard
 * rails) over one slice model; split, each half would need the other's private bookkeeping.
 */

import { createHash } from 'node:crypto';
import { describeThrown } from '../coordination/pipeline.js';
import type {
  EndpointSlice,
  EndpointSliceApi,
  EndpointSliceEndpoint,
  EndpointSlicePort,
} from '../kubernetes/resources/endpointslice-api.js';
import { ipRefusal, parseIp } from '../pools/endpoint-address.js';
import { byString, type PoolRouting, type RoutingState } from '../pools/routing-state.js';
import { abortReason } from '../runtime/clock.js';
import { type Sink, SinkApplyError, type SinkFailure, type SinkTargetStatus } from './sink.js';
import {
  newPanicTargetRecord,
  type PanicTargetRecord,
  type SinkBaseOptions,
  SinkContext,
} from './sink-context.js';

/**
 * This sink's `SinkKind`: its `kind`, the `sink` label of its metrics and the `kind` of its events.
 */
const ENDPOINTSLICE_SINK = 'endpointslice' as const;
/** The label that ties a slice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** The label naming the controller that owns a slice; the endpointslice controller skips others. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/**
 * The value of `MANAGED_BY_LABEL` on every slice this controller writes, and the label selector of
 * its LIST: slices carrying it are the ones it may change and delete.
 */
export const MANAGED_BY = 'pool-controller';
/**
 * Appended to a pool's name to name its EndpointSlices' Service: LeaderWorkerSet already creates
 * a headless Service under the pool's own name, which must never be taken over; `-alive` says
 * what this one selects. The flag's default (`--endpointslice-service-suffix`) is this constant.
 */
export const DEFAULT_SERVICE_SUFFIX = '-alive';
/** Object names here must also be valid label values and DNS labels: 63 characters. */
const MAX_NAME_LENGTH = 63;
const DNS_1035_LABEL = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The API calls this sink makes, as the `operation` label of
 * `pool_controller_sink_operations_total`.
 */
type EndpointSliceOperation = 'list' | 'apply' | 'delete';

/** One API call, for `pool_controller_sink_operations_total{sink,target,operation,result}`. */
export interface EndpointSliceOperationRecord {
  sink: typeof ENDPOINTSLICE_SINK;
  /** `namespace/name` of a slice; for a LIST `namespace/*`, or `*` slash `*` for all namespaces. */
  target: string;
  operation: EndpointSliceOperation;
  result: 'success' | 'error';
}

/**
 * What the sink is built from. `api` is the only way it reaches the cluster (tests give it a fake
 * API server through the real client); `namespace` must be the namespace the source watches, since
 * the slices it owns are listed there. Its targets, whose backoff `clock` measures, are the slices
 * and each namespace's LIST; it publishes `sink.applied` only when endpoints were added or removed.
 */
export interface EndpointSliceSinkOptions extends SinkBaseOptions<EndpointSliceOperationRecord> {
  api: EndpointSliceApi;
  /** The watched namespace, whose managed slices are listed; `undefined` lists all namespaces. */
  namespace: string | undefined;
  /** The port name every slice's port carries: the Service's port must have the same name. */
  portName: string;
  /** Appended to a pool's name to name its Service; default DEFAULT_SERVICE_SUFFIX. */
  serviceSuffix?: string;
}

type Family = 'IPv4' | 'IPv6';

/** One slice the desired state wants. */
interface DesiredSlice {
  key: string;
  pool: string;
  slice: EndpointSlice;
  /** Sorted `ip:port`. */
  endpoints: string[];
  /** Sorted `host:port` of cells left out: the API server would refuse them. */
  refused: string[];
  /** The pool is in panic: the listed slice's endpoints are kept. */
  panic: boolean;
}

interface TargetState extends PanicTargetRecord {
  namespace: string;
  name: string;
  /** Sorted `host:port` of desired cells left out: the API server would refuse them. */
  refused: string[];
}

interface ParsedAddress {
  ip: string;
  port: number;
  family: Family | undefined;
  /** Why the API server would refuse it; `undefined` when it is fine. */
  refusal: string | undefined;
}

const READY = { ready: true, serving: true, terminating: false } as const;

/** `ip:port`, with an IPv6 ip in brackets. */
function endpointText(ip: string, port: number | undefined): string {
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return port === undefined ? host : `${host}:${port}`;
}

/** A routing-state `host:port` as a slice endpoint: the IP in canonical form and its family. */
function parseAddress(address: string): ParsedAddress {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  let host = address.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const parsed = parseIp(host);
  if (!parsed) {
    return { ip: host, port, family: undefined, refusal: 'a hostname, not an IP address' };
  }
  return { ip: parsed.ip, port, family: parsed.family, refusal: ipRefusal(parsed) };
}

/** `<service>-<port>` (IPv6: `…-ipv6`), hashed down to 63 characters when longer. */
export function endpointSliceName(service: string, port: number, family: Family): string {
  const full = `${service}-${port}${family === 'IPv6' ? '-ipv6' : ''}`;
  if (full.length <= MAX_NAME_LENGTH) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_NAME_LENGTH - hash.length - 1).replace(/-+$/, '')}-${hash}`;
}

/** A JSON text with object keys sorted, so two equal slices compare equal whatever their order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => byString(a, b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Whether `actual` already holds what `desired` would write. */
function sameSlice(desired: EndpointSlice, actual: EndpointSlice): boolean {
  const labels = actual.metadata.labels ?? {};
  for (const [key, value] of Object.entries(desired.metadata.labels ?? {})) {
    if (labels[key] !== value) return false;
  }
  const endpoints = (slice: EndpointSlice): string[] =>
    slice.endpoints.map(canonical).sort(byString);
  const wanted = endpoints(desired);
  const held = endpoints(actual);
  return (
    desired.addressType === actual.addressType &&
    canonical(desired.ports) === canonical(actual.ports) &&
    wanted.length === held.length &&
    wanted.every((endpoint, index) => endpoint === held[index])
  );
}

/** Sorted `ip:port` of what a slice holds (every address with every port). */
function endpointsOf(slice: EndpointSlice): string[] {
  const ports = slice.ports.map((p) => p.port).filter((p): p is number => typeof p === 'number');
  const out = new Set<string>();
  for (const endpoint of slice.endpoints) {
    for (const ip of endpoint.addresses) {
      if (ports.length === 0) out.add(endpointText(ip, undefined));
      for (const port of ports) out.add(endpointText(ip, port));
    }
  }
  return [...out].sort(byString);
}

/**
 * A panicking pool's slice: the desired one plus every endpoint the listed slice holds that is
 * not desired (kept as listed), and the `ip:port` of those kept. A listed slice of the other
 * address type is replaced as usual: it holds no endpoint this slice could carry.
 */
function keepListed(
  want: DesiredSlice,
  actual: EndpointSlice,
): { slice: EndpointSlice; held: string[] } {
  if (actual.addressType !== want.slice.addressType) return { slice: want.slice, held: [] };
  const port = want.slice.ports[0]?.port;
  const wanted = new Set(want.slice.endpoints.flatMap((e) => e.addresses));
  const kept = actual.endpoints.filter((e) => e.addresses.some((ip) => !wanted.has(ip)));
  if (kept.length === 0) return { slice: want.slice, held: [] };
  const held = kept
    .flatMap((e) => e.addresses.filter((ip) => !wanted.has(ip)))
    .map((ip) => endpointText(ip, port))
    .sort(byString);
  const endpoints = [...want.slice.endpoints, ...kept].sort((a, b) =>
    byString(a.addresses[0] ?? '', b.addresses[0] ?? ''),
  );
  return { slice: { ...want.slice, endpoints }, held };
}

function diff(from: string[], to: string[]): { added: string[]; removed: string[] } {
  const before = new Set(from);
  const after = new Set(to);
  return {
    added: to.filter((e) => !before.has(e)),
    removed: from.filter((e) => !after.has(e)),
  };
}

/**
 * The `Sink` that publishes alive cells as EndpointSlices (see the module comment). Per slice it
 * keeps what it desired and last listed, for `status()`; each slice and each namespace's LIST has
 * its own backoff, so one refused slice never holds back the others.
 */
export class EndpointSliceSink implements Sink {
  readonly kind = ENDPOINTSLICE_SINK;
  readonly #api: EndpointSliceApi;
  readonly #namespace: string | undefined;
  readonly #portName: string;
  readonly #suffix: string;
  /** Its backoff is by slice `namespace/name`, or `namespace/*` (`*` slash `*`) for a LIST. */
  readonly #sink: SinkContext<EndpointSliceOperationRecord>;
  /** By `namespace/name`: every slice desired or still present after the last apply. */
  readonly #targets = new Map<string, TargetState>();
  /** Left-out endpoints already logged, by `namespace/pool` then endpoint: logged once. */
  #reported = new Set<string>();

  constructor(options: EndpointSliceSinkOptions) {
    this.#sink = new SinkContext(ENDPOINTSLICE_SINK, options);
    this.#api = options.api;
    this.#namespace = options.namespace;
    this.#portName = options.portName;
    this.#suffix = options.serviceSuffix ?? DEFAULT_SERVICE_SUFFIX;
  }

  /** The Service a pool's slices belong to. */
  serviceName(pool: string): string {
    return `${pool}${this.#suffix}`;
  }

  async apply(desired: RoutingState, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortReason(signal);
    const sink = this.#sink;
    const failures: SinkFailure[] = [];
    const fail = (target: string, pool: string, error: unknown): void => {
      if (signal.aborted) throw abortReason(signal);
      sink.backoff.failed(target);
      const failure = sink.failure(target, pool, describeThrown(error));
      const state = this.#targets.get(target);
      if (state) state.lastError = this.#withRefused(failure.error, state.refused);
      failures.push(failure);
      sink.logger.warn(
        { sink: this.kind, target, pool, error: failure.error },
        'endpointslice sink: apply failed for this slice',
      );
      sink.publish(failure);
    };
    /** Whether `target` is held by its backoff; if so it counts as failed, silently (already reported). */
    const held = (target: string, pool: string): boolean => {
      const until = sink.backoff.heldUntil(target);
      if (until === undefined) return false;
      failures.push(
        sink.heldFailure(target, pool, until, this.#targets.get(target)?.lastError ?? null),
      );
      return true;
    };

    // What every pool wants; a pool whose Service name is invalid fails on its own.
    const wanted = new Map<string, DesiredSlice>();
    const namespaces = new Set<string>();
    const panicking = new Set<string>();
    for (const pool of desired.pools) {
      namespaces.add(pool.namespace);
      if (pool.capacity?.panic) panicking.add(`${pool.namespace}/${pool.pool}`);
      try {
        for (const slice of this.#desiredSlices(pool)) wanted.set(slice.key, slice);
      } catch (error) {
        fail(`${pool.namespace}/${this.serviceName(pool.pool)}`, pool.pool, error);
      }
    }
    this.#reportRefused(wanted);

    // One LIST per namespace (or one for all); a namespace whose LIST fails is left as it was.
    const scopes: Array<string | undefined> =
      this.#namespace === undefined
        ? [undefined]
        : [...new Set([this.#namespace, ...namespaces])].sort(byString);
    const listed = new Map<string, EndpointSlice>();
    const unlisted = new Set<string>();
    for (const scope of scopes) {
      const target = `${scope ?? '*'}/*`;
      const markUnlisted = (): void => {
        if (scope === undefined) {
          for (const key of namespaces) unlisted.add(key);
          for (const state of this.#targets.values()) unlisted.add(state.namespace);
        } else unlisted.add(scope);
      };
      if (held(target, '*')) {
        markUnlisted();
        continue;
      }
      try {
        const slices = await sink.call(target, 'list', () =>
          this.#api.list(scope, `${MANAGED_BY_LABEL}=${MANAGED_BY}`, signal),
        );
        sink.backoff.succeeded(target);
        for (const slice of slices) {
          listed.set(`${slice.metadata.namespace}/${slice.metadata.name}`, slice);
        }
      } catch (error) {
        if (signal.aborted) throw abortReason(signal);
        markUnlisted();
        fail(target, '*', error);
      }
    }

    for (const state of this.#targets.values()) {
      if (unlisted.has(state.namespace)) {
        state.lastError = this.#withRefused(
          `not read: the LIST of ${state.namespace}'s slices failed`,
          state.refused,
        );
      }
    }

    // Targets of the namespaces read: exactly the desired and the listed slices.
    for (const [key, state] of [...this.#targets]) {
      if (!unlisted.has(state.namespace) && !wanted.has(key) && !listed.has(key)) {
        this.#targets.delete(key);
        sink.backoff.succeeded(key);
        sink.observed.forget(key);
      }
    }

    for (const [key, want] of wanted) {
      if (unlisted.has(want.slice.metadata.namespace)) continue;
      if (signal.aborted) throw abortReason(signal);
      const state = this.#target(
        want.slice.metadata.namespace,
        want.slice.metadata.name,
        want.pool,
      );
      state.desired = want.endpoints;
      state.refused = want.refused;
      const actual = listed.get(key);
      state.actual = actual ? endpointsOf(actual) : [];
      state.panic = want.panic;
      const { slice, held: kept } =
        want.panic && actual ? keepListed(want, actual) : { slice: want.slice, held: [] };
      state.heldByPanic = kept;
      if (sink.mode === 'observe') {
        const change =
          actual && sameSlice(slice, actual)
            ? { added: [], removed: [] }
            : diff(state.actual, endpointsOf(slice));
        this.#observe(key, want.pool, state, change);
        continue;
      }
      if (held(key, want.pool)) continue;
      try {
        if (actual && sameSlice(slice, actual)) {
          sink.backoff.succeeded(key);
          state.lastAppliedAt = sink.nowIso();
          state.lastError = this.#withRefused(null, state.refused);
          continue;
        }
        if (actual && actual.addressType !== slice.addressType) {
          // addressType is immutable: the slice must go before it can come back as the other kind.
          await this.#delete(key, actual, signal);
        }
        const stored = await sink.call(key, 'apply', () => this.#api.apply(slice, signal));
        const before = state.actual;
        state.actual = endpointsOf(stored);
        this.#changed(key, want.pool, diff(before, state.actual));
        sink.backoff.succeeded(key);
        state.lastAppliedAt = sink.nowIso();
        state.lastError = this.#withRefused(null, state.refused);
      } catch (error) {
        fail(key, want.pool, error);
      }
    }

    // Listed but not desired: a vanished pool, a port no cell uses any more.
    for (const [key, actual] of listed) {
      if (wanted.has(key)) continue;
      if (signal.aborted) throw abortReason(signal);
      const pool = this.#poolOf(actual);
      const state = this.#target(actual.metadata.namespace, actual.metadata.name, pool);
      state.desired = [];
      state.refused = [];
      state.actual = endpointsOf(actual);
      // A panicking pool loses no slice (a port its dead cells used is still listed).
      state.panic = panicking.has(`${actual.metadata.namespace}/${pool}`);
      state.heldByPanic = state.panic ? [...state.actual] : [];
      if (sink.mode === 'observe') {
        this.#observe(key, pool, state, {
          added: [],
          removed: state.panic ? [] : [...state.actual],
        });
        continue;
      }
      if (state.panic) {
        state.lastAppliedAt = sink.nowIso();
        state.lastError = null;
        continue;
      }
      if (held(key, pool)) continue;
      try {
        await this.#delete(key, actual, signal);
        this.#targets.delete(key);
        sink.backoff.succeeded(key);
        sink.logger.info(
          { sink: this.kind, target: key, pool },
          'endpointslice sink: deleted a slice no pool wants',
        );
        this.#changed(key, pool, { added: [], removed: state.actual });
      } catch (error) {
        fail(key, pool, error);
      }
    }

    if (signal.aborted) throw abortReason(signal);
    if (failures.length > 0) throw new SinkApplyError(failures);
  }

  status(): SinkTargetStatus[] {
    return [...this.#targets.entries()]
      .sort(([a], [b]) => byString(a, b))
      .map(([key, target]) =>
        this.#sink.status(key, target, {
          pending: [],
          backoffUntil: this.#sink.backoffUntil(key),
          panic: target.panic,
          heldByPanic: target.heldByPanic,
          // Slices carry the managed-by label; only those are ever listed, changed or deleted.
          ownership: { mode: 'managed', by: 'labels' },
        }),
      );
  }

  /** Observe mode: records and reports what `apply` would change on `key`; writes nothing. */
  #observe(
    key: string,
    pool: string,
    state: TargetState,
    change: { added: string[]; removed: string[] },
  ): void {
    state.wouldAdd = change.added;
    state.wouldRemove = change.removed;
    this.#sink.observed.report(key, pool, change.added, change.removed);
    state.lastAppliedAt = this.#sink.nowIso();
    state.lastError = this.#withRefused(null, state.refused);
  }

  nextAttemptAtMs(): number | undefined {
    return this.#sink.backoff.nextAttemptAtMs();
  }

  /** A pool's slices: its cells grouped by port and address family; refused addresses left out. */
  #desiredSlices(pool: PoolRouting): DesiredSlice[] {
    const service = this.serviceName(pool.pool);
    if (!DNS_1035_LABEL.test(service)) {
      throw new RangeError(
        `Service name ${JSON.stringify(service)} (pool name + suffix) is not a DNS-1035 label of at most ${MAX_NAME_LENGTH} characters; no EndpointSlice can belong to it`,
      );
    }
    const groups = new Map<
      string,
      { port: number; family: Family; ips: Set<string>; refused: string[] }
    >();
    for (const cell of pool.cells) {
      const parsed = parseAddress(cell.address);
      // A hostname has no family; its note goes on the port's IPv4 slice.
      const family: Family = parsed.family ?? 'IPv4';
      const key = `${parsed.port}/${family}`;
      let group = groups.get(key);
      if (!group) {
        group = { port: parsed.port, family, ips: new Set(), refused: [] };
        groups.set(key, group);
      }
      // A left-out endpoint still makes its slice exist (maybe empty), so it has a target to be
      // reported on.
      if (parsed.refusal !== undefined) group.refused.push(`${cell.address} (${parsed.refusal})`);
      else group.ips.add(parsed.ip);
    }
    return [...groups.values()].map((group) => {
      const name = endpointSliceName(service, group.port, group.family);
      const ips = [...group.ips].sort(byString);
      const ports: EndpointSlicePort[] = [
        { name: this.#portName, port: group.port, protocol: 'TCP' },
      ];
      const endpoints: EndpointSliceEndpoint[] = ips.map((ip) => ({
        addresses: [ip],
        conditions: { ...READY },
      }));
      return {
        key: `${pool.namespace}/${name}`,
        pool: pool.pool,
        slice: {
          metadata: {
            name,
            namespace: pool.namespace,
            labels: { [SERVICE_NAME_LABEL]: service, [MANAGED_BY_LABEL]: MANAGED_BY },
          },
          addressType: group.family,
          endpoints,
          ports,
        },
        endpoints: ips.map((ip) => endpointText(ip, group.port)).sort(byString),
        refused: [...group.refused].sort(byString),
        panic: pool.capacity?.panic === true,
      };
    });
  }

  /** Logs each left-out endpoint once while it stays desired; one that returns later is logged again. */
  #reportRefused(wanted: Map<string, DesiredSlice>): void {
    const current = new Set<string>();
    const fresh: Array<{ target: string; pool: string; endpoints: string[] }> = [];
    for (const [key, want] of wanted) {
      const novel: string[] = [];
      for (const endpoint of want.refused) {
        const id = `${key} ${endpoint}`;
        current.add(id);
        if (!this.#reported.has(id)) novel.push(endpoint);
      }
      if (novel.length > 0) fresh.push({ target: key, pool: want.pool, endpoints: novel });
    }
    this.#reported = current;
    for (const entry of fresh) {
      this.#sink.logger.warn(
        { sink: this.kind, ...entry },
        'endpointslice sink: left out endpoints the API server refuses in an EndpointSlice (loopback, link-local, unspecified, or not an IP); the Service will not route to them',
      );
    }
  }

  #withRefused(error: string | null, refused: string[]): string | null {
    if (refused.length === 0) return error;
    const note = `left out ${refused.length} endpoint(s) the API server refuses in an EndpointSlice: ${refused.join(', ')}`;
    return error === null ? note : `${error}; ${note}`;
  }

  #target(namespace: string, name: string, pool: string): TargetState {
    const key = `${namespace}/${name}`;
    let state = this.#targets.get(key);
    if (!state) {
      state = { ...newPanicTargetRecord(pool), namespace, name, refused: [] };
      this.#targets.set(key, state);
    }
    state.pool = pool;
    return state;
  }

  /** The pool a listed slice was written for, from its Service label. */
  #poolOf(slice: EndpointSlice): string {
    const service = slice.metadata.labels?.[SERVICE_NAME_LABEL] ?? '';
    return service.endsWith(this.#suffix) && service.length > this.#suffix.length
      ? service.slice(0, -this.#suffix.length)
      : service;
  }

  #changed(target: string, pool: string, change: { added: string[]; removed: string[] }): void {
    if (change.added.length === 0 && change.removed.length === 0) return;
    this.#sink.logger.info(
      { sink: this.kind, target, pool, added: change.added, removed: change.removed },
      'endpointslice sink: slice endpoints changed',
    );
    this.#sink.publish({ type: 'sink.applied', kind: this.kind, target, pool, ...change });
  }

  /** Deletes a listed slice, only if it is still the one listed (its uid). */
  async #delete(key: string, actual: EndpointSlice, signal: AbortSignal): Promise<void> {
    const { namespace, name, uid } = actual.metadata;
    await this.#sink.call(key, 'delete', () => this.#api.delete(namespace, name, uid, signal));
  }
}
