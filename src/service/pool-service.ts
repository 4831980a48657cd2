/**
 * The pool controller as one object: a pod source, the reconcile loop over it, the cell registry
 * the reconcile publishes to, metrics and health checks. `main.ts` adds configuration, logging,
 * the HTTP server and signals; tests build it with a fake or simulated source and a fake clock.
 *
 * Start and stop order: the HTTP server may answer before `start()` (liveness passes, readiness
 * says "not synced"); `stop()` stops the loop first (no reconcile runs against a closing source),
 * then closes the source (the reflector's worker thread).
 */

import { type Pod, podKey } from '../kubernetes/pod.js';
import type { PodSourceStats } from '../kubernetes/pod-source-stats.js';
import { cellKeyMap, splitParentKey } from '../pools/cell-key.js';
import { createCellReconciler } from '../pools/cell-reconciler.js';
import { CellRegistry } from '../pools/cell-registry.js';
import { memberOf } from '../pools/cell-state.js';
import type { PoolLabels } from '../pools/labels.js';
import type { PodSource, SourceKind } from '../pools/pod-source.js';
import { type Clock, realClock } from '../runtime/clock.js';
import { type Logger, silentLogger } from '../runtime/logger.js';
import { ReconcileLoop, type ReconcileLoopState } from '../runtime/reconcile-loop.js';
import type { ParentKey } from '../runtime/source-event.js';
import { type AdminDecision, authorizeAdmin } from './admin-auth.js';
import { CellBodies } from './cell-bodies.js';
import type {
  CellResolution,
  CellScope,
  ControlPlane,
  StoreParent,
  StoreSnapshot,
} from './control-plane.js';
import { HealthEndpoint } from './health.js';
import { ServiceMetrics } from './metrics.js';

export interface PoolServiceOptions {
  podSource: PodSource;
  sourceKind: SourceKind;
  labels: PoolLabels;
  portName: string;
  /** `null` turns resync off; `undefined` keeps the loop's default (10 h). */
  resyncPeriodMs?: number | null;
  adminToken?: string;
  clock?: Clock;
  /** Epoch ms for the cells' `lastTransitionTime`. */
  wallClock?: () => number;
  logger?: Logger;
  /** prom-client's process metrics; main turns them on, tests leave them off. */
  processMetrics?: boolean;
}

export class PoolService implements ControlPlane {
  readonly sourceKind: SourceKind;
  readonly labels: PoolLabels;
  /** The reconciled cells, written by the per-cell reconcile; read by the coordinator's render. */
  readonly registry: CellRegistry;
  readonly cells: CellBodies;
  readonly metrics: ServiceMetrics;
  readonly health: { healthz: HealthEndpoint; readyz: HealthEndpoint };
  /** `undefined`: POSTs are for loopback clients only. Never leaves this object. */
  readonly #adminToken: string | undefined;
  readonly #podSource: PodSource;
  readonly #loop: ReconcileLoop<Pod>;
  readonly #clock: Clock;
  #shuttingDown = false;
  #stopped: Promise<void> | undefined;

  constructor(options: PoolServiceOptions) {
    this.sourceKind = options.sourceKind;
    this.labels = options.labels;
    this.#adminToken = options.adminToken;
    this.#podSource = options.podSource;
    this.#clock = options.clock ?? realClock;
    const logger = options.logger ?? silentLogger;
    this.registry = new CellRegistry({ wallClock: options.wallClock });
    this.cells = new CellBodies(this.registry, { source: options.sourceKind });
    this.metrics = new ServiceMetrics({
      clock: this.#clock,
      processMetrics: options.processMetrics ?? false,
    });
    const reconcileCell = createCellReconciler({
      labels: options.labels,
      portName: options.portName,
      members: (key) => this.#loop.getByParent(key),
      registry: this.registry,
      logger,
      onTransition: (t) => this.metrics.cellTransition(t.type),
    });
    this.#loop = new ReconcileLoop<Pod>({
      source: options.podSource.source,
      keyMap: cellKeyMap(options.labels),
      reconcile: reconcileCell,
      ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
      clock: this.#clock,
      logger,
      instrumentation: this.metrics.instrumentation,
    });
    this.metrics.bind({
      loopState: () => this.#loop.state(),
      storeObjects: () => this.#loop.objectCount,
      reflector: () => this.#podSource.stats(),
      cells: this.registry,
      sourceKind: options.sourceKind,
    });
    this.health = {
      // Liveness asks only "is this process serving": restarting us cannot fix the API server.
      healthz: new HealthEndpoint('healthz', [{ name: 'ping', check: () => undefined }]),
      readyz: new HealthEndpoint('readyz', [
        {
          name: 'store-synced',
          check: () =>
            this.#loop.synced ? undefined : 'the initial list has not been applied yet',
        },
        {
          name: 'watch-healthy',
          check: () => {
            const stats = this.#podSource.stats();
            return stats.healthy
              ? undefined
              : `the pod watch is not delivering (phase ${stats.phase}${stats.lastError ? `, last error: ${stats.lastError}` : ''})`;
          },
        },
        {
          name: 'shutdown',
          check: () => (this.#shuttingDown ? 'the process is shutting down' : undefined),
        },
      ]),
    };
  }

  /** Resolves once the initial world is in the store and queued (see `ReconcileLoop.start`). */
  start(signal?: AbortSignal): Promise<void> {
    return this.#loop.start(signal);
  }

  /** Makes `/readyz` fail from now on, so load balancers drain us before the server closes. */
  beginShutdown(): void {
    this.#shuttingDown = true;
  }

  /** Stops the loop (waiting for an in-flight reconcile), then the source. Idempotent. */
  stop(): Promise<void> {
    this.#shuttingDown = true;
    this.#stopped ??= (async () => {
      try {
        await this.#loop.stop();
      } catch {
        // stop() before start() rejects: nothing was running, which is what stopping wants.
      }
      await this.#podSource.close();
    })();
    return this.#stopped;
  }

  // ----- ControlPlane reads -----

  now(): number {
    return this.#clock.now();
  }

  get synced(): boolean {
    return this.#loop.synced;
  }

  loopState(): ReconcileLoopState {
    return this.#loop.state();
  }

  storeParents(): ParentKey[] {
    return [...this.#loop.parentKeys()].sort();
  }

  get storeObjectCount(): number {
    return this.#loop.objectCount;
  }

  storeSnapshot({ objects }: { objects: boolean }): StoreSnapshot {
    const parents = this.storeParents().map((key): StoreParent => {
      const pods = this.#loop.getByParent(key);
      const entry: StoreParent = {
        key,
        reconciled: this.registry.get(key) !== undefined,
        members: pods.map(podKey),
      };
      if (!objects) return entry;
      entry.pods = pods.map((pod) => ({
        key: podKey(pod),
        namespace: pod.metadata.namespace,
        ...memberOf(pod, this.labels),
      }));
      return entry;
    });
    return {
      source: this.sourceKind,
      synced: this.synced,
      objects: this.#loop.objectCount,
      parentCount: parents.length,
      parents,
    };
  }

  resolveCell(
    id: string,
    { namespace, scope }: { namespace?: string | undefined; scope: CellScope },
  ): CellResolution {
    const keys = new Set(this.registry.keysForId(id));
    if (scope === 'observed') {
      for (const key of this.#loop.parentKeys()) if (splitParentKey(key).id === id) keys.add(key);
    }
    const candidates = [...keys]
      .filter((key) => namespace === undefined || splitParentKey(key).namespace === namespace)
      .sort();
    if (candidates.length === 0) return { kind: 'not-found' };
    if (candidates.length > 1) {
      return {
        kind: 'ambiguous',
        namespaces: candidates.map((key) => splitParentKey(key).namespace),
      };
    }
    return { kind: 'found', key: candidates[0]! };
  }

  authorizeAdmin(
    authorization: string | undefined,
    remoteAddress: string | undefined,
  ): AdminDecision {
    return authorizeAdmin(this.#adminToken, authorization, remoteAddress);
  }

  reflector(): PodSourceStats {
    return this.#podSource.stats();
  }

  enqueue(parent: ParentKey): void {
    this.#loop.enqueue(parent);
  }
}
