/**
 * A watch recorder for e2e assertions about raw API semantics: it opens one watch with
 * client-node's `Watch` and keeps every event, and it tells apart the two ways an apiserver
 * can refuse a watch — an HTTP error status before the stream starts, or an `ERROR` event (a
 * `Status` object) inside a 200 stream. A reflector must handle both; tests need to see which.
 */
import { type KubeConfig, Watch } from '@kubernetes/client-node';

export interface WatchEventRecord {
  readonly type: string;
  // biome-ignore lint/suspicious/noExplicitAny: watch objects are whatever JSON the server sent
  readonly object: any;
}

export interface WatchFailure {
  /** `http-status`: the request itself failed; `error-event`: an ERROR frame in the stream. */
  readonly form: 'http-status' | 'error-event';
  readonly code: number | undefined;
  readonly message: string;
}

export class WatchProbe {
  readonly events: WatchEventRecord[] = [];
  failure: WatchFailure | undefined;
  ended = false;
  #controller: AbortController | undefined;
  #waiters: (() => void)[] = [];

  private constructor() {}

  /**
   * Opens `GET <path>?watch=true&...params` and starts recording. Resolves once the request is
   * sent and answered (or refused), not when the watch ends.
   */
  static async open(
    kubeConfig: KubeConfig,
    path: string,
    params: Record<string, string | number | boolean | undefined>,
  ): Promise<WatchProbe> {
    const probe = new WatchProbe();
    probe.#controller = await new Watch(kubeConfig).watch(
      path,
      params,
      (type, object) => {
        probe.events.push({ type, object });
        if (type === 'ERROR' && probe.failure === undefined) {
          probe.failure = {
            form: 'error-event',
            code: typeof object?.code === 'number' ? object.code : undefined,
            message: String(object?.message ?? ''),
          };
        }
        probe.#notify();
      },
      (error: unknown) => {
        probe.ended = true;
        const code = (error as { statusCode?: unknown } | null)?.statusCode;
        if (error && probe.failure === undefined && typeof code === 'number') {
          probe.failure = {
            form: 'http-status',
            code,
            message: String((error as Error).message ?? error),
          };
        }
        probe.#notify();
      },
    );
    return probe;
  }

  /** Resolves when `condition` holds (checked after each event and at the end); rejects after `timeoutMs`. */
  async until(condition: (probe: WatchProbe) => boolean, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition(this)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `e2e watch: condition not met within ${timeoutMs} ms; ended=${this.ended}, events: ` +
            JSON.stringify(this.events.map((e) => [e.type, e.object?.metadata?.name])),
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.#controller?.abort();
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
