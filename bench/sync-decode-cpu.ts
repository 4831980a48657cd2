/**
 * `node dist/bench/sync-decode-cpu.js` (after `npm run build`): the reflector worker's own CPU per
 * event of a JSON watch burst and per JSON LIST page, as bench:sync serves them, on one thread and
 * counted by `process.threadCpuUsage()`, so that a change to the worker's decode can be compared
 * on a machine other work loads.
 *
 * Why: bench:sync's event latency (write → reconcile start, 1,000-event burst) is bound by the
 * worker's time per event, but it is a wall-clock measure across three threads and two processes;
 * on two shared cores its runs spread by 2× (and an idle process beside it saw gaps of 80–240 ms),
 * so a 15 % change in the worker cannot be seen in it. This reads the same bytes through the same
 * code: the JSON watch framer, `readFrame` (schema check and the pod's JSON) and the hop's batch
 * JSON in batches of `MAX_EVENTS_PER_BATCH`; and a 500-pod LIST page parsed as the pod API parses
 * one (`parseListWithoutManagedFields`) and each item read.
 *
 * Options: `--events N` (1000; lines per burst), `--rounds N` (15; medians over them), `--passes N`
 * (10 bursts or 4 pages per round, so that one round is well above the CPU clock's tick).
 */

import { loadavg } from 'node:os';
import { type EncodedChange, readPodValue } from '../src/kubernetes/codec/encoded-pod.js';
import { parseListWithoutManagedFields } from '../src/kubernetes/codec/managed-fields-skip.js';
import { writeChangeEventsJson } from '../src/kubernetes/codec/pod-json-writer.js';
import { readFrame } from '../src/kubernetes/codec/watch-frame-parser.js';
import type { WatchFrame } from '../src/kubernetes/codec/watch-framing.js';
import { jsonWatchFramer } from '../src/kubernetes/codec/watch-line-splitter.js';
import { MAX_EVENTS_PER_BATCH } from '../src/kubernetes/reflector-worker/worker-thread-task.js';
import { parseBenchArgs } from './bench-args.js';
import { enginePod } from './engine-pod.js';
import { WRITTEN_AT_ANNOTATION } from './fake-list-server.js';

/** Bytes per socket read: what Node's HTTP client hands the framer from a loopback burst. */
const SOCKET_READ_BYTES = 64 * 1024;
/** Pods per LIST page: the reflector's default `limit`. */
const LIST_PAGE_PODS = 500;

const USAGE =
  'usage: node dist/bench/sync-decode-cpu.js [--events N (1000)] [--rounds N (15)] [--passes N (10)]';
const values = parseBenchArgs(
  {
    events: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '15' },
    passes: { type: 'string', default: '10' },
  },
  USAGE,
);
const events = Number(values.events);
const rounds = Number(values.rounds);
const passes = Number(values.passes);
for (const [name, value] of [
  ['events', events],
  ['rounds', rounds],
  ['passes', passes],
] as const) {
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`--${name} must be an integer >= 1\n${USAGE}\n`);
    process.exit(2);
  }
}

type PodValue = { metadata: { annotations?: Record<string, string> } };

/** A burst's body as the fake server writes it, cut into socket reads. */
function burstChunks(count: number): Buffer[] {
  const lines: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const pod = enginePod(index, 20_000 + index) as PodValue;
    pod.metadata.annotations ??= {};
    pod.metadata.annotations[WRITTEN_AT_ANNOTATION] = (1.7e12 + index).toFixed(3);
    lines.push(
      `{"type":"MODIFIED","object":${JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...pod })}}\n`,
    );
  }
  const body = Buffer.from(lines.join(''));
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length; at += SOCKET_READ_BYTES)
    chunks.push(Buffer.from(body.subarray(at, at + SOCKET_READ_BYTES)));
  return chunks;
}

function listPage(first: number): Buffer {
  const items = Array.from({ length: LIST_PAGE_PODS }, (_, index) => ({
    kind: 'Pod',
    apiVersion: 'v1',
    ...enginePod(first + index, 100 + first + index),
  }));
  return Buffer.from(
    JSON.stringify({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '9' },
      items,
    }),
  );
}

function cpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? Number.NaN;
}

/** One burst through the worker's watch path; returns the hop's bytes (kept, so nothing is dead). */
function decodeBurst(chunks: readonly Buffer[]): number {
  const framer = jsonWatchFramer();
  let written = 0;
  let batch: EncodedChange[] = [];
  const frames: WatchFrame[] = [];
  for (const chunk of chunks) {
    frames.length = 0;
    framer.push(chunk, frames);
    for (const frame of frames) {
      const reading = readFrame(frame);
      if (reading.kind !== 'change') throw new Error(`unexpected frame: ${reading.kind}`);
      batch.push(reading.event as EncodedChange);
      if (batch.length === MAX_EVENTS_PER_BATCH) {
        written += writeChangeEventsJson(batch).length;
        batch = [];
      }
    }
  }
  if (batch.length > 0) written += writeChangeEventsJson(batch).length;
  return written;
}

function readPage(page: Buffer): number {
  const { items } = parseListWithoutManagedFields(page) as { items: unknown[] };
  let written = 0;
  for (const item of items) written += readPodValue(item).json.length;
  return written;
}

const chunks = burstChunks(events);
const pages = Array.from({ length: 4 }, (_, index) => listPage(index * LIST_PAGE_PODS));
const watchUs: number[] = [];
const pageMs: number[] = [];
let bytes = 0;
for (let round = 0; round < rounds; round += 1) {
  let start = cpuMs();
  for (let pass = 0; pass < passes; pass += 1) bytes += decodeBurst(chunks);
  watchUs.push(((cpuMs() - start) * 1000) / (passes * events));
  start = cpuMs();
  for (let pass = 0; pass < passes; pass += 1)
    bytes += readPage(pages[pass % pages.length] as Buffer);
  pageMs.push((cpuMs() - start) / passes);
}
const load = loadavg()
  .map((value) => value.toFixed(2))
  .join(' ');
process.stdout.write(
  `worker CPU, medians of ${rounds} rounds (node ${process.version}, load ${load}):\n` +
    `  JSON watch burst: ${median(watchUs).toFixed(1)} µs per event (min ${Math.min(...watchUs).toFixed(1)})\n` +
    `  JSON LIST page of ${LIST_PAGE_PODS}: ${median(pageMs).toFixed(1)} ms (min ${Math.min(...pageMs).toFixed(1)})\n` +
    `  (${bytes} bytes of hop JSON written)\n`,
);
