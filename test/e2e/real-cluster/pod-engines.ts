/**
 * A fake SGLang engine behind every pod the real controllers make, so a real router can reach
 * the cells the service gives it: kwok assigns pod IPs from the nodes' podCIDRs in 127.0.0.0/8,
 * Linux routes all of 127/8 to the loopback interface, and each engine binds its pod's IP and the
 * port its template declares (`http`). kwok reuses a freed IP at once, so two incarnations of a
 * group often share an IP; a template with another port tells them apart.
 *
 * Engines outlive their pods on purpose: a router then never drops a worker by failing its health
 * check, so whatever leaves the router's list was removed by the service.
 */
import { type FakeEngine, startFakeEngine } from '../environment/fake-engine.js';
import { ipInRange, LANE_POD_RANGE } from '../environment/real-cluster.js';
import type { PodVersionAt } from './pod-timeline.js';
import { httpPort } from './support.js';

export class PodEngines {
  readonly #engines = new Map<string, Promise<FakeEngine | undefined>>();
  /** Every failure to start an engine (an address in use, an address outside the range). */
  readonly errors: string[] = [];

  /** Starts an engine at the pod's `IP:port` once it has an IP, unless one listens there. */
  follow({ type, pod }: PodVersionAt): void {
    const ip = pod.status?.podIP;
    const port = httpPort(pod);
    if (type === 'DELETED' || !ip || port === undefined) return;
    const address = `${ip}:${port}`;
    if (this.#engines.has(address)) return;
    if (!ipInRange(ip, LANE_POD_RANGE)) {
      this.errors.push(`${pod.metadata?.name}: pod IP ${ip} outside ${LANE_POD_RANGE}, no engine`);
      this.#engines.set(address, Promise.resolve(undefined));
      return;
    }
    this.#engines.set(
      address,
      startFakeEngine({ host: ip, port }).catch((error: unknown) => {
        this.errors.push(`${pod.metadata?.name}: engine on ${address}: ${error}`);
        return undefined;
      }),
    );
  }

  /** How many addresses (`IP:port`) have an engine, started or starting. */
  get count(): number {
    return this.#engines.size;
  }

  async stop(): Promise<void> {
    const engines = await Promise.all(this.#engines.values());
    await Promise.all(engines.map((engine) => engine?.stop()));
  }
}
