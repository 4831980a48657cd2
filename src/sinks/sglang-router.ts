/**
 * The SGLang router sink: keeps each configured router's worker list equal to the alive cells of
 * its pool (`http://<address>` per cell).
 *
 * Every apply is a full read-compare-write per router (list, then add the missing, remove the
 * extra), so a restarted router (it forgets every worker) or a lost call is repaired by the next
 * run. Three guard rails decide what "the extra" is:
 * - Ownership (`--sglang-router-ownership`): every worker it adds carries the mark
 *   `WORKER_MARK_LABEL: WORKER_MARK_VALUE` in its labels. `managed` (the default) removes only
 *   marked workers, so hand-added ones and another tool's stay; `all` removes whatever it does not
 *   desire. A router whose list shows no labels at all (none measured: both below keep them) is
 *   owned by record instead: the URLs this process added (kept in memory; see docs/service.md).
 * - Panic (`--sink-panic-threshold`): a pool in panic (see `PoolCapacity`) loses no worker.
 * - Observe mode (`--sink-mode observe`): reads only; what would be added and removed is reported.
 *
 * What the routers do, measured on smg 1.13.0 and sglang-router 0.3.2, and what follows here:
 * - `POST /workers` is processed in the background; until then the worker is NOT in `GET /workers`
 *   but `GET /workers/{id}` shows it. So an add is remembered by id while pending, never re-posted
 *   then, and forgotten once listed, unknown (404) or failed. 202 and 409 (already there or being
 *   added, smg 1.13) both count as success.
 * - `POST /workers {"url", "labels": {...}}`: both keep the labels on the worker and list them
 *   (smg 1.13 as `labels`, 0.3.2 as `metadata`), beside what they learnt from the engine.
 * - `DELETE /workers/{id}`: 202 and 404 both count as success. smg 1.13 keeps the worker listed as
 *   `draining` for ~5 s and refuses (409) or, worse, later undoes a re-add of that URL meanwhile:
 *   a URL still listed is never added again; its add waits for a later apply.
 * - A DELETE sent while the add is pending is lost (the worker registers anyway): a worker listed
 *   again after its removal is simply removed again by the next apply.
 * - Routers health-check workers and route around unhealthy ones, so a worker is never removed for
 *   being unhealthy, and a cell whose generation changed but whose address did not stays registered.
 *   One listed as `failed` (smg 1.13: its checks gave up for good, a state it leaves only by
 *   removal) while its cell is alive is removed, and added again once it has left the list, which
 *   starts its checks over; smg takes tens of checks to give up, so a broken engine behind a Ready
 *   pod is retried that seldom.
 *
 * Routers that cannot be believed are reported, not looped on (`RouterAddRefusals`): an add
 * answered 409 without a worker id for a URL the router does not list, or taken without an id and
 * never listed, is held per URL by its own backoff and shown as a pending add with the reason
 * (and as the target's `lastError`). A worker listed, not desired, at a URL this process added,
 * but without its mark (the router dropped or rewrote the labels) cannot be removed under
 * `managed`: it is shown as `unmarked` (and in `pool_controller_sink_workers{state="unmarked"}`),
 * logged once per URL.
 *
 * smg's own Kubernetes discovery (smg >= 1.13) marks the workers it registers with
 * `smg.ai/pod-name` / `smg.ai/pod-uid`: such a worker is never removed, in any ownership mode, and
 * the first one seen is logged once per router. Worker URLs are always sent with a lowercase
 * scheme and host (smg refuses others with 400), and a listed URL is compared in that form.
 *
 * Prefill/decode routers (`--pd-disaggregation`): one router serves a prefill pool and a decode
 * pool, each a target of its own (`role`). Both versions take `worker_type` and a prefill worker's
 * `bootstrap_port` in `POST /workers` and list them back. A role's target owns the router's
 * workers of its type; a plain target owns the whole list and wants regular workers. A worker at
 * a desired URL but of another type or bootstrap port is removed and, once it has left the list,
 * added as desired: the router refuses (409) a second registration of a URL, so there is no
 * in-place change.
 *
 * Size: one sink's apply over one per-target bookkeeping (pending adds and removals, roles,
 * ownership, panic, observe); the HTTP client is its own file.
 */
import { describeThrown } from '../coordination/pipeline.js';
import type { PoolRouting, RoutingState } from '../pools/routing-state.js';
import { abortReason } from '../runtime/clock.js';
import { RouterAddRefusals } from './router-add-refusals.js';
import {
  type RouterWorker,
  SglangRouterClient,
  type SglangRouterClientOptions,
  type WorkerRegistration,
} from './sglang-router-client.js';
import {
  type Sink,
  SinkApplyError,
  type SinkFailure,
  type SinkOwnership,
  type SinkTargetStatus,
} from './sink.js';
import {
  newPanicTargetRecord,
  type PanicTargetRecord,
  type SinkBaseOptions,
  SinkContext,
} from './sink-context.js';

/**
 * This sink's `SinkKind`: its `kind`, the `sink` label of its metrics and the `kind` of its events.
 */
const SGLANG_ROUTER_SINK = 'sglang-router' as const;

/** `--sglang-router-ownership` values. */
export type RouterOwnershipMode = SinkOwnership['mode'];
/**
 * Every `RouterOwnershipMode`, in the order `--sglang-router-ownership` lists them; the flag's help
 * and parser read this list.
 */
export const ROUTER_OWNERSHIP_MODES: readonly RouterOwnershipMode[] = ['managed', 'all'];
/**
 * `managed`: a controller that removes workers it did not add breaks whatever added them (a
 * person during an incident, another tool); taking the whole list is asked for.
 */
export const DEFAULT_ROUTER_OWNERSHIP: RouterOwnershipMode = 'managed';
/** The label every worker this sink adds carries: Kubernetes' own key for "who manages this". */
export const WORKER_MARK_LABEL = 'app.kubernetes.io/managed-by';
/**
 * The value of `WORKER_MARK_LABEL` this sink sets and, under `managed` ownership, the only one
 * whose workers it removes.
 */
export const WORKER_MARK_VALUE = 'pool-controller';
/**
 * The labels smg's own Kubernetes discovery sets on the workers it registers (smg >= 1.13): a
 * worker carrying either is smg's, and this sink never removes it, whatever its ownership mode.
 */
const SMG_DISCOVERY_LABELS: readonly string[] = ['smg.ai/pod-name', 'smg.ai/pod-uid'];

/** A prefill/decode router's pool: its cells are registered as workers of this type. */
export type SglangRouterRole = 'prefill' | 'decode';

/** Every role, for parsing `role=` (the flag refuses any other). */
export const SGLANG_ROUTER_ROLES: readonly SglangRouterRole[] = ['prefill', 'decode'];

/** One `--sglang-router POOL=URL[,role=prefill|decode]`: the router at `url` serves `pool`. */
export interface SglangRouterTarget {
  pool: string;
  url: string;
  /** Absent: a plain router, whose whole worker list is the pool's (regular workers). */
  role?: SglangRouterRole;
}

/**
 * Why `next` may not be configured beside `existing` (same router URL, trailing slashes aside),
 * or `undefined`. A plain router serves one pool; a prefill/decode router serves one prefill pool
 * and one decode pool. Any other pair would own one slice of the list twice, and each would remove
 * the other's workers forever.
 */
export function routerTargetClash(
  existing: readonly SglangRouterTarget[],
  next: SglangRouterTarget,
): string | undefined {
  const url = next.url.replace(/\/+$/, '');
  for (const target of existing) {
    if (target.url.replace(/\/+$/, '') !== url) continue;
    if (target.role !== undefined && next.role !== undefined && target.role !== next.role) continue;
    const as = (t: SglangRouterTarget): string => (t.role ? `${t.pool} (${t.role})` : t.pool);
    return (
      `router ${url} is configured for pools ${as(target)} and ${as(next)}; a router serves one pool, ` +
      'or one prefill and one decode pool (role=prefill, role=decode)'
    );
  }
  return undefined;
}

/**
 * The router calls this sink makes, as the `operation` label of
 * `pool_controller_sink_operations_total`: `check` is the `GET /workers/{id}` that follows an add
 * still pending.
 */
type SinkOperation = 'list' | 'check' | 'add' | 'remove';

/** One HTTP call to a target, for `pool_controller_sink_operations_total{sink,target,operation,result}`. */
export interface SinkOperationRecord {
  sink: typeof SGLANG_ROUTER_SINK;
  target: string;
  operation: SinkOperation;
  result: 'success' | 'error';
}

/**
 * What the sink is built from. `targets` must be free of clashes (`routerTargetClash`): the
 * config refuses one at start and the constructor throws on one, since two targets owning one
 * router's list would undo each other's work on every run. Its backoff is per router, `clock`
 * measures the HTTP timeouts too, and it publishes `sink.applied` only when something was added
 * or removed.
 */
export interface SglangRouterSinkOptions extends SinkBaseOptions<SinkOperationRecord> {
  targets: readonly SglangRouterTarget[];
  /** Sent to every router as `Authorization: Bearer <key>`; never logged. */
  apiKey?: string;
  /** Per HTTP call; default ROUTER_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
  /** Which workers it may remove; default `managed` (only those it marked). */
  ownership?: RouterOwnershipMode;
}

interface Pending {
  id: string | undefined;
  since: string;
  /** The router answered 409 ("already there"), not 202. */
  exists?: boolean;
}

interface TargetState extends PanicTargetRecord {
  readonly pool: string;
  readonly role: SglangRouterRole | undefined;
  /** The router URL, plus `#role` for a prefill/decode router's target: keys its backoff. */
  readonly key: string;
  readonly client: SglangRouterClient;
  /** By worker URL: adds sent (202/409) whose worker is not listed yet. */
  readonly pendingAdds: Map<string, Pending>;
  /** By worker URL: removals sent whose worker is still listed (e.g. draining). */
  readonly pendingRemovals: Map<string, Pending>;
  /** How ownership is told on this router, from its last list; `null` before a list. */
  ownedBy: SinkOwnership['by'];
  /**
   * URLs this process added (an add accepted), for a router that keeps no marks; forgotten once
   * the URL is neither listed nor desired. In memory: a restart or a failover starts it empty.
   */
  readonly recorded: Set<string>;
  /** Adds the router took but never listed, held per URL. */
  readonly refusals: RouterAddRefusals;
  /** Listed, not desired, at a URL in `recorded`, without the mark (sorted). */
  unmarked: string[];
  /** Unmarked URLs already logged, so each is logged once while it stays unmarked. */
  readonly loggedUnmarked: Set<string>;
  /** A worker of smg's own discovery was seen on this router and logged (once). */
  smgDiscoveryLogged: boolean;
}

/**
 * A worker URL as this sink compares and sends it: scheme and host lowercase (smg >= 1.13 refuses
 * a URL whose scheme is not lowercase), no trailing slash.
 */
export function canonicalWorkerUrl(url: string): string {
  return url
    .replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, (origin) => origin.toLowerCase())
    .replace(/\/+$/, '');
}

/** Whether smg's own Kubernetes discovery registered `worker` (it carries smg's labels). */
function smgDiscovered(worker: RouterWorker): boolean {
  return SMG_DISCOVERY_LABELS.some((label) => worker.labels?.[label] !== undefined);
}

/**
 * The desired worker URLs of `pool`, from every namespace that has a pool of that name, with each
 * URL's bootstrap port (set for a prefill pool's cells only).
 */
function desiredWorkers(
  pools: readonly PoolRouting[],
  pool: string,
): {
  urls: string[];
  namespaces: string[];
  /** A namespace's pool of that name is in panic: the router loses no worker. */
  panic: boolean;
  bootstrapPorts: Map<string, number | undefined>;
} {
  const bootstrapPorts = new Map<string, number | undefined>();
  const namespaces: string[] = [];
  let panic = false;
  for (const routing of pools) {
    if (routing.pool !== pool) continue;
    namespaces.push(routing.namespace);
    if (routing.capacity?.panic) panic = true;
    for (const cell of routing.cells) {
      bootstrapPorts.set(canonicalWorkerUrl(`http://${cell.address}`), cell.bootstrapPort);
    }
  }
  return { urls: [...bootstrapPorts.keys()].sort(), namespaces, panic, bootstrapPorts };
}

/** Refused adds named in `lastError`; the rest are counted (all are in `pending`). */
const REFUSALS_IN_ERROR = 3;

/** The target's `lastError` after an apply that completed: its refused adds, or `null`. */
function refusalError(target: TargetState): string | null {
  const refused = target.refusals.entries();
  if (refused.length === 0) return null;
  const shown = refused.slice(0, REFUSALS_IN_ERROR).map(([url, r]) => `${url} (${r.reason})`);
  if (refused.length > shown.length) shown.push(`and ${refused.length - shown.length} more`);
  const count = refused.length === 1 ? 'an add' : `${refused.length} adds`;
  return `the router did not take ${count} (see pending): ${shown.join('; ')}`;
}

/** Whether a listed worker carries this sink's mark. */
function marked(worker: RouterWorker): boolean {
  return worker.labels?.[WORKER_MARK_LABEL] === WORKER_MARK_VALUE;
}

/** The target's slice of the list: a role's target its type, a plain target every worker. */
function ofTarget(target: TargetState, worker: RouterWorker): boolean {
  return target.role === undefined || worker.workerType === target.role;
}

/** A listed worker at a desired URL is registered as desired (type, and a prefill's port). */
function fits(
  target: TargetState,
  worker: RouterWorker,
  bootstrapPort: number | undefined,
): boolean {
  if (target.role === undefined) {
    return worker.workerType === undefined || worker.workerType === 'regular';
  }
  if (worker.workerType !== target.role) return false;
  return target.role !== 'prefill' || worker.bootstrapPort === bootstrapPort;
}

/**
 * The status smg (1.13) lists for a worker its health checks gave up on: the end of its health
 * state machine (an add that never passed its checks, or a ready worker whose liveness kept
 * failing), left only by removal (smg's `--remove-unhealthy-workers` does that itself). A worker
 * merely failing its checks is `not_ready`, routed around, and recovers by itself.
 */
const ROUTER_GAVE_UP_STATUS = 'failed';

/** The router gave up on this worker for good (see `ROUTER_GAVE_UP_STATUS`). */
function gaveUpOn(worker: RouterWorker): boolean {
  return worker.status === ROUTER_GAVE_UP_STATUS;
}

/** The sorted, distinct URLs of the workers in `target`'s slice of the list. */
function sliceUrls(target: TargetState, workers: readonly RouterWorker[]): string[] {
  return [
    ...new Set(workers.filter((w) => ofTarget(target, w)).map((w) => canonicalWorkerUrl(w.url))),
  ].sort();
}

/**
 * The `Sink` that keeps SGLang routers' worker lists equal to their pools' alive cells (see the
 * module comment). It remembers between runs what only it can know: adds still pending, the URLs it
 * added to a router that keeps no marks, and each router's backoff.
 */
export class SglangRouterSink implements Sink {
  readonly kind = SGLANG_ROUTER_SINK;
  readonly #targets: Map<string, TargetState>;
  readonly #apiKey: string | undefined;
  /** Its backoff is by target key (the router URL, plus `#role` for a role's target). */
  readonly #sink: SinkContext<SinkOperationRecord>;
  readonly #ownership: RouterOwnershipMode;

  constructor(options: SglangRouterSinkOptions) {
    this.#ownership = options.ownership ?? DEFAULT_ROUTER_OWNERSHIP;
    this.#sink = new SinkContext(SGLANG_ROUTER_SINK, options);
    this.#apiKey = options.apiKey || undefined;
    this.#targets = new Map();
    for (const target of options.targets) {
      const clientOptions: SglangRouterClientOptions = {
        url: target.url,
        clock: this.#sink.clock,
      };
      if (options.apiKey) clientOptions.apiKey = options.apiKey;
      if (options.requestTimeoutMs !== undefined)
        clientOptions.timeoutMs = options.requestTimeoutMs;
      const client = new SglangRouterClient(clientOptions);
      // Two pools owning one slice of a router's list would remove each other's workers forever.
      const clash = routerTargetClash(
        [...this.#targets.values()].map((t) => ({
          pool: t.pool,
          url: t.client.url,
          ...(t.role ? { role: t.role } : {}),
        })),
        target,
      );
      if (clash) throw new TypeError(clash);
      const key = target.role ? `${client.url}#${target.role}` : client.url;
      this.#targets.set(key, {
        ...newPanicTargetRecord(target.pool),
        role: target.role,
        key,
        client,
        pendingAdds: new Map(),
        pendingRemovals: new Map(),
        ownedBy: null,
        recorded: new Set(),
        refusals: new RouterAddRefusals({
          clock: this.#sink.clock,
          ...(options.backoffBaseMs !== undefined ? { baseMs: options.backoffBaseMs } : {}),
          ...(options.backoffMaxMs !== undefined ? { maxMs: options.backoffMaxMs } : {}),
        }),
        unmarked: [],
        loggedUnmarked: new Set(),
        smgDiscoveryLogged: false,
      });
    }
  }

  async apply(desired: RoutingState, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortReason(signal);
    const sink = this.#sink;
    const targets = [...this.#targets.values()];
    // A router held by its backoff is not called, however many runs begin; the others are.
    const held = new Map<TargetState, number>();
    for (const target of targets) {
      const until = sink.backoff.heldUntil(target.key);
      if (until !== undefined) held.set(target, until);
    }
    const results = await Promise.allSettled(
      targets.map((target) =>
        held.has(target)
          ? Promise.resolve(this.#holdTarget(target, desired))
          : this.#applyTarget(target, desired, signal),
      ),
    );
    if (signal.aborted) throw abortReason(signal);
    const failures: SinkFailure[] = [];
    results.forEach((result, index) => {
      const target = targets[index] as TargetState;
      const url = target.client.url;
      const key = target.key;
      const until = held.get(target);
      if (until !== undefined) {
        // Already reported when its call failed: no new event, no new log line.
        failures.push(sink.heldFailure(url, target.pool, until, target.lastError));
        return;
      }
      if (result.status === 'fulfilled') {
        sink.backoff.succeeded(key);
        return;
      }
      sink.backoff.failed(key);
      const failure = sink.failure(url, target.pool, this.#redact(describeThrown(result.reason)));
      target.lastError = failure.error;
      failures.push(failure);
      sink.logger.warn(
        {
          sink: this.kind,
          target: failure.target,
          pool: failure.pool,
          error: failure.error,
          ...(target.role ? { role: target.role } : {}),
          retryAt: sink.isoAt(sink.backoff.heldUntil(key) ?? sink.clock.now()),
        },
        'sglang router sink: apply failed for this router; it is not called again before its backoff ends',
      );
      sink.publish(failure);
    });
    if (failures.length > 0) throw new SinkApplyError(failures);
  }

  /** The earliest end of a router's backoff or of a refused add's (`RouterAddRefusals`). */
  nextAttemptAtMs(): number | undefined {
    let next = this.#sink.backoff.nextAttemptAtMs();
    for (const target of this.#targets.values()) {
      const at = target.refusals.nextAttemptAtMs();
      if (at !== undefined && (next === undefined || at < next)) next = at;
    }
    return next;
  }

  /** A held router: only what it should list is updated, for `status()`; nothing is sent. */
  #holdTarget(target: TargetState, state: RoutingState): void {
    const { urls, panic } = desiredWorkers(state.pools, target.pool);
    target.desired = urls;
    target.panic = panic;
  }

  status(): SinkTargetStatus[] {
    return [...this.#targets.values()].map((target) =>
      this.#sink.status(target.client.url, target, {
        ...(target.role ? { role: target.role } : {}),
        pending: [
          ...[...target.pendingAdds].map(([endpoint, p]) => ({
            operation: 'add' as const,
            endpoint,
            since: p.since,
          })),
          ...target.refusals.entries().map(([endpoint, r]) => ({
            operation: 'add' as const,
            endpoint,
            since: r.since,
            reason: r.reason,
            retryAt: this.#sink.isoAt(r.retryAtMs),
          })),
          ...[...target.pendingRemovals].map(([endpoint, p]) => ({
            operation: 'remove' as const,
            endpoint,
            since: p.since,
          })),
        ].sort((a, b) => a.endpoint.localeCompare(b.endpoint)),
        unmarked: target.unmarked,
        backoffUntil: this.#sink.backoffUntil(target.key),
        panic: target.panic,
        heldByPanic: target.heldByPanic,
        ownership: {
          mode: this.#ownership,
          by: this.#ownership === 'all' ? null : target.ownedBy,
        },
      }),
    );
  }

  /**
   * One router: list, settle what was pending, add the missing, remove the extra it owns (none
   * while its pool is in panic); in observe mode only the list, and the diff is reported.
   */
  async #applyTarget(target: TargetState, state: RoutingState, signal: AbortSignal): Promise<void> {
    const {
      urls: desired,
      namespaces,
      panic,
      bootstrapPorts,
    } = desiredWorkers(state.pools, target.pool);
    target.desired = desired;
    target.panic = panic;
    const sink = this.#sink;
    if (namespaces.length > 1) {
      sink.logger.warn(
        { sink: this.kind, target: target.client.url, pool: target.pool, namespaces },
        'sglang router sink: the pool name exists in several namespaces; the router gets the cells of all',
      );
    }
    const desiredSet = new Set(desired);

    const workers = await this.#call(target, 'list', () => target.client.listWorkers(signal));
    target.actual = sliceUrls(target, workers);
    if (workers.length > 0) {
      target.ownedBy = workers.some((w) => w.labels !== undefined) ? 'labels' : 'record';
    }
    const listed = new Map<string, RouterWorker[]>();
    for (const worker of workers) {
      const url = canonicalWorkerUrl(worker.url);
      const same = listed.get(url);
      if (same) same.push(worker);
      else listed.set(url, [worker]);
    }
    target.refusals.keepOnly(desiredSet);
    for (const url of listed.keys()) target.refusals.settled(url);
    for (const url of [...target.recorded]) {
      if (!listed.has(url) && !desiredSet.has(url)) target.recorded.delete(url);
    }

    // Removals settle once the URL has left the list; a worker listed again and not draining
    // (a DELETE lost while its add was pending) is removed again below.
    for (const url of [...target.pendingRemovals.keys()]) {
      if (!listed.has(url)) target.pendingRemovals.delete(url);
    }

    // Adds settle once listed; one the router no longer knows (restarted) or gave up on is
    // forgotten, so it is sent again below if still desired.
    // An add the router gave no id for, or named an id it then does not know after a 409, is
    // refused (held per URL); an honest 404 or failed job is posted again, refused if it repeats.
    for (const [url, pending] of [...target.pendingAdds]) {
      if (listed.has(url)) {
        target.pendingAdds.delete(url);
        continue;
      }
      if (!desiredSet.has(url)) {
        target.pendingAdds.delete(url);
        continue;
      }
      const id = pending.id;
      if (id === undefined) {
        target.pendingAdds.delete(url);
        this.#refuse(
          target,
          url,
          'the router took the add without a worker id to follow and does not list it',
        );
        continue;
      }
      const detail = await this.#call(target, 'check', () => target.client.getWorker(id, signal));
      if (detail !== null && detail.job?.status !== 'failed') continue;
      target.pendingAdds.delete(url);
      const what = detail === null ? `does not know worker ${id} (404)` : `failed the add of ${id}`;
      if (pending.exists) {
        this.#refuse(target, url, `the router answered 409 naming worker ${id}, then ${what}`);
      } else if (target.refusals.forgotten(url)) {
        this.#refuse(target, url, `the router ${what} again, never listing it`);
      }
    }

    // Listed (draining included: re-adding a draining URL is refused or later undone; listed
    // as another type, it is removed below first) or being added: nothing to send.
    const toAdd = desired.filter(
      (url) =>
        !listed.has(url) &&
        !target.pendingAdds.has(url) &&
        target.refusals.heldUntil(url) === undefined,
    );
    const unmarked = new Set<string>();
    const toRemove: RouterWorker[] = [];
    const held = new Set<string>();
    /** Desired URLs whose worker the router gave up on: removed, to be added again. */
    const retried = new Set<string>();
    for (const [url, same] of listed) {
      for (const worker of same) {
        // Kept: a desired URL registered as desired and not given up on by the router (the cell
        // is alive in the API: a fresh add starts the router's checks over), or a worker of
        // another target's slice (a prefill/decode router's other role).
        const desiredHere = desiredSet.has(url);
        if (
          desiredHere
            ? fits(target, worker, bootstrapPorts.get(url)) && !gaveUpOn(worker)
            : !ofTarget(target, worker)
        ) {
          continue;
        }
        // Never removed: one draining already, or one this sink may not touch (ownership).
        if (worker.status === 'draining') continue;
        if (!this.#owns(target, worker)) {
          if (target.recorded.has(url) && worker.labels !== undefined && !smgDiscovered(worker)) {
            unmarked.add(url);
          }
          continue;
        }
        if (panic) held.add(url);
        else {
          toRemove.push(worker);
          if (desiredHere && gaveUpOn(worker)) retried.add(url);
        }
      }
    }
    target.heldByPanic = [...held].sort();
    if (retried.size > 0 && sink.mode !== 'observe') {
      sink.logger.warn(
        {
          sink: this.kind,
          target: target.client.url,
          pool: target.pool,
          ...(target.role ? { role: target.role } : {}),
          workers: [...retried].sort(),
        },
        'sglang router sink: the router gave up on the workers of these alive cells (status failed); removing them to add them again',
      );
    }
    this.#reportUnmarked(target, unmarked);
    if (sink.mode === 'observe') {
      target.wouldAdd = toAdd;
      target.wouldRemove = [...new Set(toRemove.map((w) => w.url))].sort();
      sink.observed.report(target.client.url, target.pool, target.wouldAdd, target.wouldRemove);
      target.lastAppliedAt = sink.nowIso();
      target.lastError = null;
      return;
    }

    const errors: string[] = [];
    const added: string[] = [];
    const removed: string[] = [];
    const now = (): string => sink.nowIso();

    for (const url of toAdd) {
      if (signal.aborted) throw abortReason(signal);
      const registration: WorkerRegistration = {
        labels: { [WORKER_MARK_LABEL]: WORKER_MARK_VALUE },
      };
      if (target.role) registration.workerType = target.role;
      const bootstrapPort = bootstrapPorts.get(url);
      if (target.role === 'prefill' && bootstrapPort !== undefined) {
        registration.bootstrapPort = bootstrapPort;
      }
      try {
        const result = await this.#call(target, 'add', () =>
          target.client.addWorker(url, signal, registration),
        );
        target.refusals.sent(url);
        if (result.result === 'exists' && result.id === undefined) {
          this.#refuse(
            target,
            url,
            'the router answered 409 (already registered) without a worker id, yet does not list it',
          );
          continue;
        }
        const pending: Pending = { id: result.id, since: now() };
        if (result.result === 'exists') pending.exists = true;
        target.pendingAdds.set(url, pending);
        if (result.result === 'accepted') target.recorded.add(url);
        added.push(url);
      } catch (error) {
        if (signal.aborted) throw abortReason(signal);
        errors.push(describeThrown(error));
      }
    }

    for (const worker of toRemove) {
      const url = canonicalWorkerUrl(worker.url);
      if (signal.aborted) throw abortReason(signal);
      try {
        await this.#call(target, 'remove', () => target.client.removeWorker(worker.id, signal));
        if (!target.pendingRemovals.has(url)) {
          target.pendingRemovals.set(url, { id: worker.id, since: now() });
        }
        if (!removed.includes(url)) removed.push(url);
      } catch (error) {
        if (signal.aborted) throw abortReason(signal);
        errors.push(describeThrown(error));
      }
    }

    if (added.length > 0 || removed.length > 0) {
      // `actual` is the router's list after this apply, not the one read before it.
      try {
        const after = await this.#call(target, 'list', () => target.client.listWorkers(signal));
        target.actual = sliceUrls(target, after);
        const listedAfter = new Set(after.map((w) => canonicalWorkerUrl(w.url)));
        for (const url of [...target.pendingAdds.keys()]) {
          if (listedAfter.has(url)) target.pendingAdds.delete(url);
        }
        for (const url of [...target.pendingRemovals.keys()]) {
          if (!listedAfter.has(url)) target.pendingRemovals.delete(url);
        }
      } catch (error) {
        if (signal.aborted) throw abortReason(signal);
        errors.push(describeThrown(error));
      }
      sink.logger.info(
        {
          sink: this.kind,
          target: target.client.url,
          pool: target.pool,
          ...(target.role ? { role: target.role } : {}),
          added,
          removed,
        },
        'sglang router sink: router workers changed',
      );
      sink.publish({
        type: 'sink.applied',
        kind: this.kind,
        target: target.client.url,
        pool: target.pool,
        added,
        removed,
      });
    }
    if (errors.length > 0) throw new Error(errors.join('; '));
    target.lastAppliedAt = now();
    target.lastError = refusalError(target);
  }

  /** Holds the add of `url` by its own backoff and says why, once per refusal. */
  #refuse(target: TargetState, url: string, reason: string): void {
    const sink = this.#sink;
    target.refusals.refuse(url, reason, sink.nowIso());
    sink.logger.warn(
      {
        sink: this.kind,
        target: target.client.url,
        pool: target.pool,
        ...(target.role ? { role: target.role } : {}),
        worker: url,
        reason,
        retryAt: sink.isoAt(target.refusals.heldUntil(url) ?? sink.clock.now()),
      },
      'sglang router sink: the router did not take this add; it is not sent again before its backoff ends',
    );
  }

  /** Keeps `unmarked` for status and logs each URL once while it stays unmarked. */
  #reportUnmarked(target: TargetState, unmarked: ReadonlySet<string>): void {
    target.unmarked = [...unmarked].sort();
    for (const url of [...target.loggedUnmarked]) {
      if (!unmarked.has(url)) target.loggedUnmarked.delete(url);
    }
    for (const url of target.unmarked) {
      if (target.loggedUnmarked.has(url)) continue;
      target.loggedUnmarked.add(url);
      this.#sink.logger.warn(
        { sink: this.kind, target: target.client.url, pool: target.pool, worker: url },
        'sglang router sink: a worker this process added is listed without its mark (the router dropped or rewrote its labels); it is not desired and, under managed ownership, not removed',
      );
    }
  }

  /**
   * Whether this sink may remove `worker`: always with `all`; with `managed`, when it carries the
   * mark, or, on a router that lists no labels, when this process recorded adding it.
   */
  #owns(target: TargetState, worker: RouterWorker): boolean {
    if (smgDiscovered(worker)) {
      if (!target.smgDiscoveryLogged) {
        target.smgDiscoveryLogged = true;
        this.#sink.logger.warn(
          { sink: this.kind, target: target.client.url, pool: target.pool, worker: worker.url },
          "sglang router sink: this router also lists workers of smg's own Kubernetes discovery (smg.ai/pod-name, smg.ai/pod-uid); they are never removed. Do not point both at the same pods",
        );
      }
      return false;
    }
    if (this.#ownership === 'all') return true;
    if (worker.labels !== undefined) return marked(worker);
    return target.recorded.has(canonicalWorkerUrl(worker.url));
  }

  /** One call to a router, counted under its URL (both roles' targets of a router share it). */
  #call<T>(target: TargetState, operation: SinkOperation, run: () => Promise<T>): Promise<T> {
    return this.#sink.call(target.client.url, operation, run);
  }

  #redact(message: string): string {
    return this.#apiKey === undefined ? message : message.replaceAll(this.#apiKey, '[redacted]');
  }
}
