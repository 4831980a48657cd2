/**
 * Judges a real router's worker lists, polled over time, against what the API held alive at the
 * same moments: a worker may be listed only while its cell is alive in the API, or for at most
 * `lagMs` after it stopped being (the service has to see the change and send the DELETE).
 * Listing an address before its cell was ever alive — a half-formed group, or a worker of
 * another incarnation — fails at once, whatever the lag.
 *
 * "Alive in the API" is derived here, independently of src/: the documented rule (every member
 * Ready, none terminating, worker indices exactly 0..size-1; support.ts's expectedCells) and
 * LWS's incarnation rule (each worker's StatefulSet is owned by the leader's uid), with the
 * leader's `podIP:port` (its `http` containerPort) as the address.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ListedWorker } from '../support-routers.js';
import { LWS } from '../support-service.js';
import type { PodVersionAt } from './pod-timeline.js';
import { expectedCells, httpPort } from './support.js';

/** One read of the router's worker list. */
export interface RouterPoll {
  /** `Date.now()` when the answer arrived. */
  readonly at: number;
  readonly workers: readonly ListedWorker[];
}

/** The addresses (`ip:port`) of the leaders of `pool`'s cells alive by both rules in `pods`. */
export function aliveAddresses(
  pods: readonly V1Pod[],
  setOwners: ReadonlyMap<string, string>,
  pool: string,
): Set<string> {
  const byName = new Map(pods.map((p) => [p.metadata?.name, p]));
  const addresses = new Set<string>();
  for (const cell of expectedCells(pods)) {
    if (!cell.alive || !cell.id.startsWith(`${pool}-`)) continue;
    const members = cell.members.map((name) => byName.get(name)!);
    const leader = members.find(
      (p) => (p.metadata?.labels?.[`${LWS}/worker-index`] ?? '0') === '0',
    );
    const port = leader && httpPort(leader);
    if (!leader?.status?.podIP || port === undefined) continue;
    const sameIncarnation = members.every((member) => {
      if (member === leader) return true;
      const set = member.metadata?.ownerReferences?.find((o) => o.kind === 'StatefulSet')?.uid;
      return set !== undefined && setOwners.get(set) === leader.metadata?.uid;
    });
    if (sameIncarnation) addresses.add(`${leader.status.podIP}:${port}`);
  }
  return addresses;
}

/**
 * Reads a worker list (a router's, or a slice's endpoints as URLs) every `everyMs` from creation
 * until stop(), keeping each answer with its time and each failure, for auditRouter.
 */
export class WorkerPolls {
  readonly polls: RouterPoll[] = [];
  readonly errors: string[] = [];
  #polling = true;
  readonly #loop: Promise<void>;

  constructor(read: () => Promise<readonly ListedWorker[]>, everyMs: number) {
    this.#loop = this.#run(read, everyMs);
  }

  async #run(read: () => Promise<readonly ListedWorker[]>, everyMs: number): Promise<void> {
    while (this.#polling) {
      try {
        const workers = await read();
        this.polls.push({ at: Date.now(), workers });
      } catch (error) {
        this.errors.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }

  /** Ends the loop after the read in flight; resolves once it has. */
  async stop(): Promise<void> {
    this.#polling = false;
    await this.#loop;
  }
}

/** When each address was alive: [from, to) in `Date.now()` ms, `to` Infinity while it still is. */
export type AliveIntervals = Map<string, Array<[number, number]>>;

/** Replays every pod version in arrival order and records when each address was alive. */
export function aliveIntervals(
  versions: readonly PodVersionAt[],
  setOwners: ReadonlyMap<string, string>,
  pool: string,
): AliveIntervals {
  const pods = new Map<string, V1Pod>();
  const intervals: AliveIntervals = new Map();
  let alive = new Set<string>();
  for (const { at, type, pod } of versions) {
    const uid = pod.metadata?.uid;
    if (!uid) continue;
    if (type === 'DELETED') pods.delete(uid);
    else pods.set(uid, pod);
    const now = aliveAddresses([...pods.values()], setOwners, pool);
    for (const address of now) {
      if (!alive.has(address))
        intervals.set(address, [...(intervals.get(address) ?? []), [at, Infinity]]);
    }
    for (const address of alive) {
      if (!now.has(address)) {
        const open = intervals.get(address)!.at(-1)!;
        open[1] = at;
      }
    }
    alive = now;
  }
  return intervals;
}

/** What auditRouter found. */
export interface RouterAudit {
  /** Polls read, and worker entries judged in them. */
  polls: number;
  judged: number;
  /** Listings that broke the rule, described. */
  violations: string[];
  /** The longest a removed cell stayed listed after it stopped being alive (ms). */
  longestRemovalMs: number;
}

/**
 * How much earlier than this process's watch another watcher (the service's) may have seen the
 * same pod version: an address listed up to this long before the timeline shows it alive is
 * judged alive. A cell that was never alive has no interval at all and fails whatever the slack.
 */
export const WATCH_SKEW_MS = 250;

/** `host:port` of a worker URL. */
const addressOf = (url: string): string => new URL(url).host;

/**
 * Every worker listed (smg's `draining` workers excepted: a removed worker it keeps a few seconds
 * and sends nothing new to) must be alive in `intervals` at some moment in
 * [poll − lagMs, poll + WATCH_SKEW_MS].
 */
export function auditRouter(
  polls: readonly RouterPoll[],
  intervals: AliveIntervals,
  lagMs: number,
): RouterAudit {
  const audit: RouterAudit = {
    polls: polls.length,
    judged: 0,
    violations: [],
    longestRemovalMs: 0,
  };
  for (const { at, workers } of polls) {
    for (const worker of workers) {
      if (worker.status === 'draining') continue;
      audit.judged += 1;
      const address = addressOf(worker.url);
      const alive = (intervals.get(address) ?? []).filter(([from]) => from <= at + WATCH_SKEW_MS);
      const last = alive.at(-1);
      if (!last) {
        audit.violations.push(
          `${new Date(at).toISOString()} ${address} listed, never alive before`,
        );
        continue;
      }
      const late = last[1] === Infinity || last[1] >= at ? 0 : at - last[1];
      audit.longestRemovalMs = Math.max(audit.longestRemovalMs, late);
      if (late > lagMs) {
        audit.violations.push(
          `${new Date(at).toISOString()} ${address} listed ${late} ms after its cell stopped being alive`,
        );
      }
    }
  }
  return audit;
}
