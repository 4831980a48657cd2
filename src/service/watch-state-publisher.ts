/**
 * `watch.state` events from the pod source's stats: the source reports its state by being read
 * (`PodSource.stats()`, cheap and synchronous), not by calling back, so the service polls it and
 * publishes each change of phase or health, and each relist, as an event for the stream and the
 * status page.
 */
import type { PodSourceStats } from '../model/pod-source-stats.js';
import type { Clock } from '../runtime/clock.js';
import type { WatchStateEvent } from './service-events.js';

/**
 * How often the source's stats are read: a state change reaches the event stream within a
 * second, for a read of a few fields.
 */
export const WATCH_STATE_POLL_MS = 1_000;

/** What `publishWatchStates` reads, where it publishes, and how it waits. */
interface WatchStatePublisherOptions {
  stats: () => PodSourceStats;
  publish: (event: WatchStateEvent) => void;
  clock: Clock;
  pollMs: number;
}

/** Publishes `watch.state` whenever the source's phase, health or relist count changes; ends on abort. */
export async function publishWatchStates(
  options: WatchStatePublisherOptions,
  signal: AbortSignal,
): Promise<void> {
  const { stats: read, publish, clock, pollMs } = options;
  let last: { phase: string; healthy: boolean; relists: Record<string, number> } | undefined;
  while (!signal.aborted) {
    const stats = read();
    const relists = { ...stats.relists } as Record<string, number>;
    if (!last || last.phase !== stats.phase || last.healthy !== stats.healthy) {
      const event: WatchStateEvent = {
        type: 'watch.state',
        phase: stats.phase,
        healthy: stats.healthy,
      };
      if (stats.lastError && !stats.healthy) event.lastError = stats.lastError;
      publish(event);
    }
    for (const [reason, count] of Object.entries(relists)) {
      if (last && count > (last.relists[reason] ?? 0)) {
        publish({
          type: 'watch.state',
          phase: stats.phase,
          healthy: stats.healthy,
          relistReason: reason as NonNullable<WatchStateEvent['relistReason']>,
        });
      }
    }
    last = { phase: stats.phase, healthy: stats.healthy, relists };
    try {
      await clock.sleep(pollMs, signal);
    } catch {
      return;
    }
  }
}
