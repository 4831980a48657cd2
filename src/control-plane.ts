/**
 * What the HTTP routes may see of the running service: reads of the reconciled cells, the store,
 * the queue and the source, plus the one write (requeue). Routes depend on this interface, not on
 * the loop or the source classes, so a route cannot reach into internals by accident.
 */

import type { HealthCheck } from './health.js';
import type { Pod } from './kubernetes/pod.js';
import type { ReflectorStats } from './kubernetes/reflector-stats.js';
import type { CellRegistry } from './pools/cell-registry.js';
import type { PoolLabels } from './pools/labels.js';
import type { SourceKind } from './pools/pod-source.js';
import type { ReconcileLoopState } from './runtime/reconcile-loop.js';
import type { ParentKey } from './runtime/source-event.js';

export interface ControlPlane {
  /** Where pods come from; every status response says it. */
  readonly source: SourceKind;
  readonly labels: PoolLabels;
  /** The reconciled cells. */
  readonly cells: CellRegistry;
  readonly health: {
    readonly healthz: readonly HealthCheck[];
    readonly readyz: readonly HealthCheck[];
  };
  readonly metrics: { readonly contentType: string; render(): Promise<string> };
  /** `undefined`: POSTs are for loopback clients only. */
  readonly adminToken: string | undefined;
  /** The loop's clock, to turn its clock times into ages and delays. */
  now(): number;
  readonly synced: boolean;
  loopState(): ReconcileLoopState;
  /** Parents with members in the store, sorted: what is observed, reconciled or not. */
  storeParents(): ParentKey[];
  storeMembers(parent: ParentKey): readonly Pod[];
  readonly storeObjectCount: number;
  reflector(): ReflectorStats;
  /** Queues a reconcile of `parent` (deduplicated with one already queued). */
  enqueue(parent: ParentKey): void;
}
