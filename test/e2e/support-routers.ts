/**
 * What the e2e files that drive real SGLang routers share: reading a router's worker list and
 * sending one completion through it, both with the router's API key. Used by
 * sglang-router-sink.test.ts and sglang-router-controller.test.ts.
 */
import { expect } from 'vitest';
import { fakeModel } from './environment/fake-engine.js';
import type { RunningRouter } from './environment/routers.js';

/** A worker as `GET /workers` lists it: its URL, and its id and status where the router gives them. */
export interface ListedWorker {
  url: string;
  id?: string;
  status?: string;
}

/** `GET /workers`; throws on any answer but 200. */
export async function listWorkers(router: RunningRouter, apiKey: string): Promise<ListedWorker[]> {
  const response = await fetch(`${router.url}/workers`, {
    headers: { authorization: `Bearer ${apiKey}` },
    signal: AbortSignal.timeout(5_000),
  });
  if (response.status !== 200) throw new Error(`GET /workers: HTTP ${response.status}`);
  const body = (await response.json()) as { workers: ListedWorker[] };
  return body.workers.map((w) => ({
    url: w.url,
    ...(w.id ? { id: w.id } : {}),
    ...(w.status ? { status: w.status } : {}),
  }));
}

/** One completion of one token through the router, which must answer 200; its body. */
export async function generate(router: RunningRouter, apiKey: string): Promise<string> {
  const response = await fetch(`${router.url}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({
      text: 'hello',
      model: fakeModel,
      sampling_params: { max_new_tokens: 1 },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return text;
}
