/** A decoder thread of bench/decode-threads.ts: parse, validate and trim a page, encode the pods. */
import { parentPort } from 'node:worker_threads';
import { parsePod } from '../src/model/pod.js';

const decoder = new TextDecoder();
const encoder = new TextEncoder();
parentPort?.on('message', (bytes: Uint8Array) => {
  const page = JSON.parse(decoder.decode(bytes)) as { items: unknown[] };
  const pods = page.items.map((item) => parsePod(item));
  encoder.encode(JSON.stringify(pods));
  parentPort?.postMessage(pods.length);
});
