/**
 * How many bytes of pods one LIST may hold in the reflector's worker: the worker's heap limit,
 * but never more than a share of the memory the container may use (cgroup `memory.max`). A LIST
 * answer that ignores `limit` (one 100 MB page) was held up to the worker's heap limit (then
 * 1 GiB), and the process grew past the chart's 512 Mi until the kernel killed it; refused at the
 * budget, it is a failed LIST, retried after the backoff, with the reason in `lastError`.
 */
import { readFileSync } from 'node:fs';

/**
 * The share of the container's memory one LIST's pods may take: the main thread holds the store
 * (the old one and the new during a relist), the worker the LIST's bytes and one decoded page,
 * and Node itself needs room; a quarter leaves the rest to them.
 */
export const LIST_SHARE_OF_CONTAINER_MEMORY = 0.25;

/** Where the container's memory limit is: cgroup v2, then v1. */
const CGROUP_MEMORY_LIMIT_FILES = [
  '/sys/fs/cgroup/memory.max',
  '/sys/fs/cgroup/memory/memory.limit_in_bytes',
];

/**
 * cgroup v1 writes "no limit" as a huge number (the page-rounded `LONG_MAX`); anything at or
 * above this is no limit.
 */
const NO_LIMIT_BYTES = 2 ** 60;

/**
 * The container's memory limit in bytes, or `undefined` when there is none (`max`, v1's huge
 * number, no cgroup files: not in a container, or not Linux). `read` is injectable for tests.
 */
export function containerMemoryLimit(
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): number | undefined {
  for (const path of CGROUP_MEMORY_LIMIT_FILES) {
    let text: string;
    try {
      text = read(path).trim();
    } catch {
      continue;
    }
    if (text === 'max') return undefined;
    if (!/^[0-9]+$/.test(text)) continue;
    const bytes = Number(text);
    return bytes > 0 && bytes < NO_LIMIT_BYTES ? bytes : undefined;
  }
  return undefined;
}

/**
 * Most bytes of pods one LIST may hold in the worker, and the largest LIST page it may read: the
 * worker's heap limit (`heapBytes`), and at most `LIST_SHARE_OF_CONTAINER_MEMORY` of the
 * container's memory (`containerBytes`, when there is a limit).
 */
export function listMemoryBudget(heapBytes: number, containerBytes: number | undefined): number {
  if (containerBytes === undefined) return heapBytes;
  return Math.max(
    1,
    Math.min(heapBytes, Math.floor(containerBytes * LIST_SHARE_OF_CONTAINER_MEMORY)),
  );
}
