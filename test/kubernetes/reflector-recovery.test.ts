/**
 * The reflector's retry policy as sequences of (event, time) → request, on the fake clock: how
 * fast it comes back after an API server outage or restart, however faults follow each other,
 * and that it never sends a down or refusing server more than one request of a kind per second.
 */
import { describe, expect, it } from 'vitest';
import { ApiConnectionError, ApiStatusError } from '../../src/kubernetes/client/api-errors.js';
import { KubernetesReflector } from '../../src/kubernetes/reflector/reflector.js';
import type {
  ListPodsOptions,
  PodApi,
  PodList,
  WatchPodsOptions,
  WatchStream,
} from '../../src/kubernetes/resources/pod-api.js';
import { decodedEvents } from '../support/decoded-pods.js';
import { drain } from '../support/drain.js';
import { FakeClock } from '../support/fake-clock.js';
import { encodedPod, FakeWatch } from '../support/fake-pod-api.js';
import { pod } from '../support/pods.js';

/** A request as the server saw it, and whether it was up to see it. */
interface Seen {
  verb: 'LIST' | 'WATCH';
  at: number;
  up: boolean;
  resourceVersion?: string;
}

/**
 * An API server that can be down (every request refused before any answer, as a closed port
 * does) or up. While up it answers LISTs at its current version and keeps WATCHes open; going
 * down breaks every open WATCH. `restart()` forgets the watch cache, so a WATCH from a version
 * before the restart is answered 410, as kube-apiserver's cache does.
 */
class RestartableApi implements PodApi {
  readonly seen: Seen[] = [];
  up = true;
  /** Versions below this are too old for the watch cache: the last restart's version. */
  #oldest = 0;
  #version = 10;
  readonly #open = new Set<FakeWatch>();

  constructor(readonly clock: FakeClock) {}

  down(): void {
    this.up = false;
    for (const watch of this.#open) watch.fail(new Error('socket hang up'));
    this.#open.clear();
  }

  restart(): void {
    this.up = true;
    this.#version += 5;
    this.#oldest = this.#version;
  }

  requests(verb: 'LIST' | 'WATCH', from = 0, to = Number.POSITIVE_INFINITY): Seen[] {
    return this.seen.filter((r) => r.verb === verb && r.at >= from && r.at < to);
  }

  async listPods(options: ListPodsOptions): Promise<PodList> {
    this.seen.push({ verb: 'LIST', at: this.clock.now(), up: this.up });
    if (!this.up) throw new ApiConnectionError('LIST', new Error('connect ECONNREFUSED'), false);
    void options;
    return { pods: [encodedPod(pod({ name: 'a' }))], resourceVersion: String(this.#version) };
  }

  async watchPods(options: WatchPodsOptions): Promise<WatchStream> {
    this.seen.push({
      verb: 'WATCH',
      at: this.clock.now(),
      up: this.up,
      resourceVersion: options.resourceVersion,
    });
    if (!this.up) throw new ApiConnectionError('WATCH', new Error('connect ECONNREFUSED'), false);
    if (Number(options.resourceVersion) < this.#oldest) {
      throw new ApiStatusError('WATCH', { code: 410, reason: 'Expired', causes: [] });
    }
    const watch = new FakeWatch(options);
    this.#open.add(watch);
    return watch;
  }
}

function setup(random = () => 0.5) {
  const clock = new FakeClock();
  const api = new RestartableApi(clock);
  const reflector = new KubernetesReflector({ api, clock, random });
  const stream = drain(decodedEvents(reflector.watch()));
  return { clock, api, reflector, stream };
}

/** Time from `from` until the reflector has relisted and holds a live WATCH again. */
async function recovered(
  clock: FakeClock,
  api: RestartableApi,
  reflector: KubernetesReflector,
  from: number,
): Promise<number> {
  await clock.advanceUntil(
    () =>
      api.requests('LIST', from).length > 0 &&
      reflector.stats().phase === 'watching' &&
      reflector.stats().healthy,
  );
  return clock.now() - from;
}

describe('KubernetesReflector recovery: an API server down, then back', () => {
  it('reconnects within 2 s of the server answering again after a one-minute outage', async () => {
    const { clock, api, reflector, stream } = setup();
    await clock.advance(10_000);
    api.down();
    await clock.advance(60_000);
    api.restart();
    const back = clock.now();
    expect(await recovered(clock, api, reflector, back)).toBeLessThanOrEqual(2_000);
    // The restarted server said the cursor expired: relisted at once, no backoff before the LIST.
    const [watch410, list] = [api.requests('WATCH', back)[0], api.requests('LIST', back)[0]];
    expect(list?.at).toBe(watch410?.at);
    await stream.close();
  });

  it('recovers as fast from a restart 25 s after recovering from a 60 s outage', async () => {
    const { clock, api, reflector, stream } = setup();
    await clock.advance(10_000);
    api.down();
    await clock.advance(60_000);
    api.restart();
    const first = await recovered(clock, api, reflector, clock.now());
    await clock.advance(25_000);
    api.down();
    await clock.advance(3_000);
    api.restart();
    const second = await recovered(clock, api, reflector, clock.now());
    expect({ first, second }).toEqual({
      first: expect.any(Number),
      second: expect.any(Number),
    });
    expect(first).toBeLessThanOrEqual(2_000);
    expect(second).toBeLessThanOrEqual(2_000);
    await stream.close();
  });

  it('recovers within 2 s after each of several restarts in a row and a 2-minute outage', async () => {
    const { clock, api, reflector, stream } = setup();
    const times: number[] = [];
    for (const downMs of [2_000, 4_000, 120_000, 1_000]) {
      await clock.advance(20_000);
      api.down();
      await clock.advance(downMs);
      api.restart();
      times.push(await recovered(clock, api, reflector, clock.now()));
    }
    for (const ms of times) expect(ms).toBeLessThanOrEqual(2_000);
    await stream.close();
  });

  it('sends a down server at most one WATCH and one LIST a second on average', async () => {
    const { clock, api, stream } = setup(() => 0.001);
    await clock.advance(5_000);
    api.down();
    await clock.advance(120_000);
    const down = api.seen.filter((r) => !r.up);
    const watches = down.filter((r) => r.verb === 'WATCH').length;
    const lists = down.filter((r) => r.verb === 'LIST').length;
    // The lowest jitter gives the shortest waits: still at least a second apart.
    expect(watches).toBeLessThanOrEqual(120);
    expect(watches).toBeGreaterThanOrEqual(100);
    expect(lists).toBe(0);
    const gaps = down.slice(1).map((r, i) => r.at - (down[i] as Seen).at);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1_000);
    await stream.close();
  });

  it('keeps to the rate bound and recovers every time on a server flapping 3 s up, 3 s down', async () => {
    const { clock, api, reflector, stream } = setup(() => 0.001);
    await clock.advance(5_000);
    let downMs = 0;
    const recoveries: number[] = [];
    for (let flap = 0; flap < 10; flap += 1) {
      api.down();
      const downAt = clock.now();
      await clock.advance(3_000);
      downMs += clock.now() - downAt;
      api.restart();
      const upAt = clock.now();
      recoveries.push(await recovered(clock, api, reflector, upAt));
      await clock.advance(3_000 - (clock.now() - upAt));
    }
    for (const verb of ['LIST', 'WATCH'] as const) {
      const whileDown = api.seen.filter((r) => r.verb === verb && !r.up).length;
      expect(whileDown / (downMs / 1_000)).toBeLessThanOrEqual(1);
    }
    // Over the whole flapping run too, neither kind comes more than once a second on average.
    const span = (clock.now() - 5_000) / 1_000;
    expect(api.requests('WATCH', 5_000).length / span).toBeLessThanOrEqual(1);
    expect(api.requests('LIST', 5_000).length / span).toBeLessThanOrEqual(1);
    for (const ms of recoveries) expect(ms).toBeLessThanOrEqual(2_000);
    await stream.close();
  });
});

describe('KubernetesReflector recovery: a server that answers with errors', () => {
  it('grows the waits as client-go while WATCH is answered 503, and honours Retry-After', async () => {
    const clock = new FakeClock();
    const answers: Error[] = [
      new ApiStatusError('WATCH', { code: 503, causes: [] }),
      new ApiStatusError('WATCH', { code: 503, causes: [] }),
      new ApiStatusError('WATCH', { code: 429, causes: [], retryAfterMs: 10_000 }),
      new ApiStatusError('WATCH', { code: 503, causes: [] }),
    ];
    const seen: number[] = [];
    const api: PodApi = {
      listPods: async () => ({ pods: [], resourceVersion: '10' }),
      watchPods: async (options) => {
        seen.push(clock.now());
        const answer = answers.shift();
        if (answer) throw answer;
        return new FakeWatch(options);
      },
    };
    const reflector = new KubernetesReflector({ api, clock, random: () => 0 });
    const stream = drain(decodedEvents(reflector.watch()));
    await clock.advanceUntil(() => seen.length === 5);
    const gaps = seen.slice(1).map((t, i) => t - (seen[i] as number));
    expect(gaps).toEqual([800, 1_600, 10_000, 6_400]);
    await stream.close();
  });
});
