/**
 * The event bus as Server-Sent Events, for `GET /api/v1/events`: what a person watches through
 * `kubectl port-forward` with `curl -N` to see the controller think.
 *
 * One bounded subscription per client: a slow client loses the oldest events, never holds the
 * publisher back, and is told how many it lost with an `events.dropped` event. A comment line
 * every `heartbeatMs` keeps proxies and port-forwards from closing an idle stream. Nothing here
 * outlives `signal`: shutdown aborts it and the stream ends at once.
 */
import type { EventBus } from '../coordination/event-bus.js';
import type { Clock } from '../runtime/clock.js';
import type { ServiceEvent } from './service-events.js';

/** 15 s: well inside the idle timeouts of common proxies (60 s) and of kubectl port-forward. */
export const SSE_HEARTBEAT_MS = 15_000;
/**
 * Events one client may fall behind by before the oldest are dropped: a few seconds of a busy
 * controller (a relist of thousands of cells publishes one `cell.changed` each), bounded memory.
 */
export const SSE_BUFFER_SIZE = 2_048;
/** How long a client waits before reconnecting, sent once as the stream's `retry:` field. */
export const SSE_RETRY_MS = 2_000;

export interface EventStreamOptions {
  bus: EventBus<ServiceEvent>;
  clock: Clock;
  signal: AbortSignal;
  /** Only these event types; absent: every type. */
  types?: readonly string[];
  heartbeatMs?: number;
  bufferSize?: number;
  /** Told each time events were dropped for this client (for the metric). */
  onDropped?: (count: number) => void;
}

/** One SSE message: `id`, `event` and one `data` line of JSON. */
export function formatSseEvent(id: number, type: string, data: unknown): string {
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The stream's text, chunk by chunk; ends when `signal` aborts. */
export async function* sseStream(options: EventStreamOptions): AsyncGenerator<string> {
  const { bus, clock, signal } = options;
  const heartbeatMs = options.heartbeatMs ?? SSE_HEARTBEAT_MS;
  const subscription = bus.subscribe({
    ...(options.types ? { types: options.types } : {}),
    bufferSize: options.bufferSize ?? SSE_BUFFER_SIZE,
    signal,
  });
  const events = subscription[Symbol.asyncIterator]();
  let id = 0;
  let reportedDropped = 0;
  let next: Promise<IteratorResult<ServiceEvent>> | undefined;
  try {
    yield `retry: ${SSE_RETRY_MS}\n: connected; heartbeat every ${heartbeatMs / 1000}s\n\n`;
    while (!signal.aborted) {
      next ??= events.next();
      const heartbeat = new AbortController();
      const onAbort = (): void => heartbeat.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      const tick = clock.sleep(heartbeatMs, heartbeat.signal).then(
        () => 'heartbeat' as const,
        () => 'aborted' as const,
      );
      const winner = await Promise.race([next.then((result) => ({ result })), tick]);
      heartbeat.abort();
      signal.removeEventListener('abort', onAbort);
      if (winner === 'aborted') return;
      if (winner === 'heartbeat') {
        yield ': heartbeat\n\n';
        continue;
      }
      next = undefined;
      if (winner.result.done) return;
      const dropped = subscription.dropped - reportedDropped;
      if (dropped > 0) {
        reportedDropped = subscription.dropped;
        options.onDropped?.(dropped);
        id += 1;
        yield formatSseEvent(id, 'events.dropped', {
          type: 'events.dropped',
          dropped,
          totalDropped: subscription.dropped,
        });
      }
      id += 1;
      yield formatSseEvent(id, winner.result.value.type, winner.result.value);
    }
  } finally {
    subscription.close();
  }
}
