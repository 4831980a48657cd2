/**
 * What the service needs from a pod source, whichever it is: a stream for the loop, stats for the
 * control plane, and a way to stop it. The worker-backed Kubernetes source and the simulated
 * source both have this shape, so everything above them is identical in both modes.
 */

import type { Source } from '../runtime/source-event.js';
import type { Pod } from './pod.js';
import type { PodSourceStats } from './pod-source-stats.js';

/** Where pods come from; shown in every status response so simulated data is never mistaken for real. */
export type SourceKind = 'kubernetes' | 'simulated';

/**
 * Every `SourceKind` as a runtime value, for code that must enumerate or check them. Typed as
 * `SourceKind[]`, so a misspelt entry fails to compile (a missing one does not: `routes/schemas.ts`
 * and `src/cli/config.ts` still spell the list on their own).
 */
export const SOURCE_KINDS: readonly SourceKind[] = ['kubernetes', 'simulated'];

/**
 * A pod source as the service holds it. `source` is opened by the loop's source driver, and
 * opened again after every end or failure; `stats()` and `close()` are for the control plane and
 * the shutdown, which never need to know which source runs.
 */
export interface PodSource {
  readonly source: Source<Pod>;
  /** Cheap and synchronous: read on every `/readyz`, `/api/v1/reflector` and scrape. */
  stats(): PodSourceStats;
  /**
   * Pods read by the reflector and not yet handed to the store (a replace counts each of its
   * pods): client-go's FIFO depth, `informer_queued_items`. Optional: a source without such a
   * buffer leaves it out. Cheap and synchronous: read on every scrape.
   */
  queuedItems?(): number;
  /** Ends open streams and releases resources; idempotent. */
  close(): Promise<void>;
}
