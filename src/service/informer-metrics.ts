/**
 * client-go's informer metrics for the pod informer, under the names, labels, help texts and
 * buckets of component-base's `metrics/prometheus/clientgo/fifo` (as controller-runtime registers
 * them since 0.23), so the informer panels of new client-go dashboards read this controller too:
 * `informer_queued_items`, `informer_processing_latency_seconds` and
 * `informer_store_resource_version`, labelled `name, group, version, resource`.
 *
 * client-go's FIFO sits between the reflector and the store; here that is the buffer of events the
 * worker-backed source holds for the loop's source driver. The source says how many items wait in
 * it (`queuedItems`); the latency and the store's resourceVersion are measured on the stream the
 * driver reads (`instrument`): an event is popped when `next()` hands it over and processed when
 * the driver asks for the next one (or closes the stream), by which time it is in the store and
 * its parents are handed on, as client-go times its `Pop` callback.
 */
import { Gauge, Histogram, type Registry } from 'prom-client';
import type { Clock } from '../runtime/clock.js';
import type { Source, SourceEvent } from '../runtime/source-event.js';

/**
 * The `name` label: the informer's owner. kube-controller-manager labels its informers with its
 * own name, and so does this process.
 */
const INFORMER_NAME = 'pool-controller';

/** The group, version and resource labels of the one informer this process runs: core/v1 pods. */
const POD_INFORMER_RESOURCE = { group: '', version: 'v1', resource: 'pods' } as const;

/** client-go's `informer_processing_latency_seconds` buckets: 1 ms to 10 s. */
export const INFORMER_PROCESSING_LATENCY_BUCKETS = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/**
 * How many of a resourceVersion's last digits the gauge carries, as client-go's: a float64 holds
 * 15 decimal digits exactly, and etcd revisions have fewer for a very long time.
 */
const STORE_RESOURCE_VERSION_DIGITS = 15;

/**
 * The gauge's value for a resourceVersion: its 15 least significant digits as a number, as
 * client-go reports it; `undefined` for one that is not a decimal integer (the gauge then keeps
 * its last value rather than inventing one).
 */
export function storeResourceVersionValue(resourceVersion: string): number | undefined {
  if (!/^\d+$/.test(resourceVersion)) return undefined;
  return Number(resourceVersion.slice(-STORE_RESOURCE_VERSION_DIGITS));
}

/** The newer of two decimal resourceVersions (longer is larger; equal lengths compare as text). */
function newerResourceVersion(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined || !/^\d+$/.test(a)) return b;
  if (b === undefined || !/^\d+$/.test(b)) return a;
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length > y.length ? a : b;
  return x >= y ? a : b;
}

/**
 * The resourceVersion the store is at once it has applied `event`: the object's for an upsert,
 * the tombstone's for a delete, and for a replace the newest of its objects' (the LIST's own
 * version does not travel with the event; `InformerMetricsBindings.cursor` supplies it once the
 * store has caught up).
 */
function eventResourceVersion<T>(
  event: SourceEvent<T>,
  resourceVersionOf: (object: T) => string | undefined,
): string | undefined {
  switch (event.type) {
    case 'upsert':
      return resourceVersionOf(event.object);
    case 'delete':
      return event.lastObject === undefined ? undefined : resourceVersionOf(event.lastObject);
    case 'replace': {
      let newest: string | undefined;
      for (const object of event.objects.values()) {
        newest = newerResourceVersion(newest, resourceVersionOf(object));
      }
      return newest;
    }
  }
}

/** What the scrape-time gauges read from the pod source; bound once the source exists. */
interface InformerMetricsBindings {
  /**
   * Items waiting between the reflector and the store (a replace counts its objects, as client-go's
   * FIFO queues each listed item); `undefined` for a source with no such buffer, shown as 0.
   */
  queuedItems: () => number | undefined;
  /**
   * The reflector's cursor (the version its next WATCH resumes from). While nothing is queued or
   * being processed the store has applied everything the reflector read, bookmarks included, so
   * the store is at this version.
   */
  cursor: () => string | undefined;
}

/** Where the informer metrics live and what they are timed with. */
interface InformerMetricsOptions {
  registry: Registry;
  /** Times each event's processing (the loop's clock, so tests drive it). */
  clock: Clock;
  /** The `name` label; default `INFORMER_NAME`. */
  name?: string;
}

/**
 * The three client-go informer series for the pod informer, every one present from the first
 * scrape (0 until something happens), as client-go creates them with the informer.
 */
export class InformerMetrics {
  readonly #clock: Clock;
  readonly #labels: { name: string; group: string; version: string; resource: string };
  readonly #latency: Histogram<'name' | 'group' | 'version' | 'resource'>;
  #bindings: InformerMetricsBindings | undefined;
  /** The resourceVersion of the last event the store finished applying. */
  #applied: string | undefined;
  /** Events handed to the driver and not yet processed, across open streams. */
  #processing = 0;

  constructor(options: InformerMetricsOptions) {
    this.#clock = options.clock;
    // In the order client_golang writes them (sorted), so a scrape reads as client-go's does.
    const labels = {
      group: POD_INFORMER_RESOURCE.group,
      name: options.name ?? INFORMER_NAME,
      resource: POD_INFORMER_RESOURCE.resource,
      version: POD_INFORMER_RESOURCE.version,
    };
    this.#labels = labels;
    const registers = [options.registry];
    const labelNames = ['name', 'group', 'version', 'resource'] as const;
    const bound = (): InformerMetricsBindings | undefined => this.#bindings;
    new Gauge({
      name: 'informer_queued_items',
      help: 'Number of items currently queued in the FIFO.',
      labelNames,
      registers,
      collect() {
        this.set(labels, bound()?.queuedItems() ?? 0);
      },
    });
    this.#latency = new Histogram({
      name: 'informer_processing_latency_seconds',
      help: 'Time taken to process events after popping from the queue.',
      labelNames,
      buckets: INFORMER_PROCESSING_LATENCY_BUCKETS,
      registers,
    });
    this.#latency.zero(labels);
    const storeVersion = (): string | undefined => this.storeResourceVersion();
    new Gauge({
      name: 'informer_store_resource_version',
      help: 'The 15 least significant digits of the resource version of the store.',
      labelNames,
      registers,
      collect() {
        const version = storeVersion();
        const value = version === undefined ? undefined : storeResourceVersionValue(version);
        if (value !== undefined) this.set(labels, value);
        else if (version === undefined) this.set(labels, 0);
      },
    });
  }

  /** Connects the scrape-time gauges to the pod source. */
  bind(bindings: InformerMetricsBindings): void {
    this.#bindings = bindings;
  }

  /**
   * The version the store is at: the reflector's cursor while the store has caught up with it
   * (nothing queued, nothing being processed), else the last applied event's.
   */
  storeResourceVersion(): string | undefined {
    const bindings = this.#bindings;
    if (bindings && this.#processing === 0 && bindings.queuedItems() === 0) {
      const cursor = bindings.cursor();
      if (cursor !== undefined) return cursor;
    }
    return this.#applied;
  }

  /**
   * `source` as the loop should read it: the same streams, with each event's processing timed
   * (from `next()` handing it over until the driver asks for the next, or closes the stream) and
   * its resourceVersion recorded once processed. `resourceVersionOf` reads an object's version.
   */
  instrument<T>(
    source: Source<T>,
    resourceVersionOf: (object: T) => string | undefined,
  ): Source<T> {
    return (signal) => {
      const streams = source(signal);
      return {
        [Symbol.asyncIterator]: () => this.#instrumentStream(streams, resourceVersionOf),
      };
    };
  }

  #instrumentStream<T>(
    streams: AsyncIterable<SourceEvent<T>>,
    resourceVersionOf: (object: T) => string | undefined,
  ): AsyncIterator<SourceEvent<T>> {
    const inner = streams[Symbol.asyncIterator]();
    let popped: { atMs: number; event: SourceEvent<T> } | undefined;
    const processed = (): void => {
      if (!popped) return;
      const { atMs, event } = popped;
      popped = undefined;
      this.#processing -= 1;
      this.#latency.observe(this.#labels, Math.max(0, this.#clock.now() - atMs) / 1000);
      const version = eventResourceVersion(event, resourceVersionOf);
      if (version !== undefined) this.#applied = version;
    };
    const iterator: AsyncIterator<SourceEvent<T>> = {
      next: async () => {
        processed();
        const result = await inner.next();
        if (!result.done) {
          popped = { atMs: this.#clock.now(), event: result.value };
          this.#processing += 1;
        }
        return result;
      },
    };
    const close = inner.return?.bind(inner);
    if (close) {
      iterator.return = (value) => {
        processed();
        return close(value);
      };
    }
    return iterator;
  }
}
