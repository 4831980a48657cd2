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

export const SOURCE_KINDS: readonly SourceKind[] = ['kubernetes', 'simulated'];

export interface PodSource {
  readonly source: Source<Pod>;
  /** Cheap and synchronous: read on every `/readyz`, `/api/v1/reflector` and scrape. */
  stats(): PodSourceStats;
  /** Ends open streams and releases resources; idempotent. */
  close(): Promise<void>;
}
