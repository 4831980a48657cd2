/**
 * The server side of `npm run bench:api`, run as its own process so the load generator never
 * shares its event loop: the real control plane over a static simulated world, and beside it a
 * bare Fastify app serving the floors (the list's exact bytes pre-serialized, and hello-world)
 * plus the bench's control routes (start/stop a continuous 10k-pod relist).
 *
 * Prints one JSON line on stdout once ready: `{"api": port, "floor": port, "cells": n, "pods": n}`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Fastify from 'fastify';
import { buildServer } from '../src/http/app.js';
import { LWS_LABELS } from '../src/pools/labels.js';
import { assembleService } from '../src/service/assemble.js';
import { SimulatedPodSource } from '../src/simulated/simulated-source.js';

/** The world: 1,000 cells of 4 pods. */
const CELLS = Number(process.env.BENCH_CELLS ?? 1_000);
const SIZE = Number(process.env.BENCH_CELL_SIZE ?? 4);
/** The relist world: 10,000 pods (the API's 1,000 cells plus more, all delivered in one replace). */
const RELIST_PODS = Number(process.env.BENCH_RELIST_PODS ?? 10_000);
const POOL = 'engine';

const sim = new SimulatedPodSource({
  story: false,
  pools: [{ name: POOL, cells: CELLS, size: SIZE }],
});
const service = assembleService({
  podSource: sim,
  sourceKind: 'simulated',
  labels: LWS_LABELS,
  portName: 'http',
  resyncPeriodMs: null,
  processMetrics: true,
});

/** Resolves once nothing is queued or running: every published cell reflects the store. */
async function drained(): Promise<void> {
  for (;;) {
    const state = service.loopState();
    if (state.queued.length === 0 && !state.inFlight) return;
    await new Promise((r) => setTimeout(r, 2));
  }
}

const api = await buildServer(service);
await api.listen({ host: '127.0.0.1', port: 0 });
await service.start();
await drained();

const listBytes = service.cells.listBody();
const floor = Fastify({ logger: false });
floor.get('/list', (_request, reply) => {
  reply.type('application/json; charset=utf-8').send(listBytes);
});
floor.get('/hello', async () => ({ hello: 'world' }));

/** Continuous relists: the next one as soon as the previous one's reconciles are done. */
let relisting: Promise<void> | undefined;
let stopRelisting = false;
const relistTimes: number[] = [];
/** How long the event loop was blocked during the relists: what a request can wait at worst. */
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
floor.post('/control/relist/start', async () => {
  if (relisting) return { started: false };
  sim.addReadyCells({ name: POOL, cells: Math.ceil(RELIST_PODS / SIZE), size: SIZE });
  stopRelisting = false;
  relistTimes.length = 0;
  loopDelay.reset();
  loopDelay.enable();
  relisting = (async () => {
    while (!stopRelisting) {
      const started = performance.now();
      const lists = sim.stats().lists;
      sim.relist();
      while (sim.stats().lists === lists) await new Promise((r) => setTimeout(r, 1));
      await drained();
      relistTimes.push(performance.now() - started);
    }
  })();
  return { started: true, pods: sim.podCount };
});
floor.post('/control/relist/stop', async () => {
  stopRelisting = true;
  await relisting;
  relisting = undefined;
  loopDelay.disable();
  const sorted = [...relistTimes].sort((a, b) => a - b);
  return {
    relists: sorted.length,
    medianMs: sorted[Math.floor(sorted.length / 2)] ?? null,
    maxMs: sorted.at(-1) ?? null,
    pods: sim.podCount,
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
    loopDelayMaxMs: loopDelay.max / 1e6,
  };
});
await floor.listen({ host: '127.0.0.1', port: 0 });

const port = (app: typeof floor | typeof api): number => {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
};
process.stdout.write(
  `${JSON.stringify({ api: port(api), floor: port(floor), cells: service.registry.size, pods: sim.podCount, listBytes: listBytes.length })}\n`,
);

const shutdown = async (): Promise<void> => {
  stopRelisting = true;
  await relisting;
  await floor.close();
  await api.close();
  await service.stop();
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
