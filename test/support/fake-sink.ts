/**
 * A `Sink` that records every `apply` (the desired state, its signal, the fake-clock time) and
 * can be scripted: the next apply fails, or hangs until the test ends it (honouring its signal
 * as a real request does, or not, like a request stuck in a dead connection). `status()` returns
 * what the test sets, so a test can say "changes are still pending on the target".
 */
import type { RoutingState } from '../../src/pools/routing-state.js';
import {
  type Sink,
  SinkApplyError,
  type SinkKind,
  type SinkTargetStatus,
} from '../../src/sinks/sink.js';

export interface ApplyCall {
  desired: RoutingState;
  signal: AbortSignal;
  atMs?: number;
  /** Set once the call settled: how it ended. */
  outcome?: 'applied' | 'failed' | 'aborted';
  /** Scripted by `hangNext`: it waits for the test (or, when honoured, its signal). */
  held?: boolean;
}

/** An apply held open by `hangNext`. */
export interface HeldApply {
  /** Resolves with the call once it has been made. */
  readonly called: Promise<ApplyCall>;
  release(): void;
  fail(error: unknown): void;
}

type Script =
  | { kind: 'fail'; error: unknown }
  | {
      kind: 'hang';
      honourSignal: boolean;
      onCall: (call: ApplyCall) => void;
      settled: Promise<{ ok: true } | { ok: false; error: unknown }>;
    };

/** A `SinkApplyError` for one target, as a real sink throws it. */
export function targetFailure(target = 'http://router:30000', error = 'connection refused') {
  return new SinkApplyError([
    { type: 'sink.failed', kind: 'sglang-router', target, pool: 'engine', error },
  ]);
}

/** A status entry for one target; `pending` entries make the routing controller look again. */
export function targetStatus(overrides: Partial<SinkTargetStatus> = {}): SinkTargetStatus {
  return {
    kind: 'sglang-router',
    target: 'http://router:30000',
    pool: 'engine',
    desired: [],
    actual: [],
    pending: [],
    lastAppliedAt: null,
    lastError: null,
    backoffUntil: null,
    mode: 'apply',
    wouldAdd: [],
    wouldRemove: [],
    panic: false,
    heldByPanic: [],
    ownership: { mode: 'managed', by: 'labels' },
    ...overrides,
  };
}

export class FakeSink implements Sink {
  readonly calls: ApplyCall[] = [];
  /** What `status()` returns; set it freely. */
  statuses: SinkTargetStatus[] = [];
  /** What `nextAttemptAtMs()` returns: a target held by its backoff until then. */
  heldUntilMs: number | undefined;
  readonly #scripts: Script[] = [];

  constructor(
    private readonly now?: () => number,
    readonly kind: SinkKind = 'sglang-router',
  ) {}

  /** The next apply (queued: call again for later ones) rejects with `error`. */
  failNext(error: unknown = targetFailure()): void {
    this.#scripts.push({ kind: 'fail', error });
  }

  /**
   * The next apply waits until the test releases or fails it. With `honourSignal` (the default)
   * it rejects with the signal's reason when the signal aborts.
   */
  hangNext(options: { honourSignal?: boolean } = {}): HeldApply {
    let onCall!: (call: ApplyCall) => void;
    const called = new Promise<ApplyCall>((resolve) => {
      onCall = resolve;
    });
    let finish!: (outcome: { ok: true } | { ok: false; error: unknown }) => void;
    const settled = new Promise<{ ok: true } | { ok: false; error: unknown }>((resolve) => {
      finish = resolve;
    });
    this.#scripts.push({
      kind: 'hang',
      honourSignal: options.honourSignal ?? true,
      onCall,
      settled,
    });
    return {
      called,
      release: () => finish({ ok: true }),
      fail: (error) => finish({ ok: false, error }),
    };
  }

  /** An apply scripted by `hangNext` is still waiting for the test. */
  get holding(): boolean {
    return this.calls.some((c) => c.held === true && c.outcome === undefined);
  }

  nextAttemptAtMs(): number | undefined {
    return this.heldUntilMs;
  }

  /** Pool → addresses of each apply, compactly: `engine=10.0.0.1:30000,10.0.0.2:30000`. */
  applied(): string[] {
    return this.calls.map((c) =>
      c.desired.pools.map((p) => `${p.pool}=${p.cells.map((x) => x.address).join(',')}`).join(' '),
    );
  }

  async apply(desired: RoutingState, signal: AbortSignal): Promise<void> {
    const call: ApplyCall = { desired, signal };
    if (this.now) call.atMs = this.now();
    this.calls.push(call);
    const script = this.#scripts.shift();
    try {
      if (script?.kind === 'fail') throw script.error;
      if (script?.kind === 'hang') {
        call.held = true;
        script.onCall(call);
        const waits = [script.settled];
        if (script.honourSignal) {
          waits.push(
            new Promise((resolve) => {
              const abort = (): void => resolve({ ok: false, error: signal.reason });
              if (signal.aborted) abort();
              else signal.addEventListener('abort', abort, { once: true });
            }),
          );
        }
        const outcome = await Promise.race(waits);
        if (!outcome.ok) throw outcome.error;
      } else {
        await Promise.resolve(); // a real target never answers synchronously
        signal.throwIfAborted();
      }
      call.outcome = 'applied';
    } catch (err) {
      call.outcome = signal.aborted ? 'aborted' : 'failed';
      throw err;
    }
  }

  status(): SinkTargetStatus[] {
    return this.statuses;
  }
}
