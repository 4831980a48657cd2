import { describe, expect, it } from 'vitest';
import {
  containerMemoryLimit,
  LIST_SHARE_OF_CONTAINER_MEMORY,
  listMemoryBudget,
} from '../../src/kubernetes/reflector-worker/memory-budget.js';

const MiB = 1024 * 1024;

/** A reader that knows only `files`; any other path does not exist. */
function files(contents: Record<string, string>) {
  return (path: string): string => {
    const text = contents[path];
    if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return text;
  };
}

describe("the container's memory limit", () => {
  it('is read from cgroup v2 memory.max', () => {
    expect(containerMemoryLimit(files({ '/sys/fs/cgroup/memory.max': '536870912\n' }))).toBe(
      512 * MiB,
    );
  });

  it('is none when memory.max says max', () => {
    expect(containerMemoryLimit(files({ '/sys/fs/cgroup/memory.max': 'max\n' }))).toBeUndefined();
  });

  it('is read from cgroup v1, whose huge number means none', () => {
    const v1 = '/sys/fs/cgroup/memory/memory.limit_in_bytes';
    expect(containerMemoryLimit(files({ [v1]: '1073741824' }))).toBe(1024 * MiB);
    expect(containerMemoryLimit(files({ [v1]: '9223372036854771712' }))).toBeUndefined();
  });

  it('is none outside a container, or when the file says nothing readable', () => {
    expect(containerMemoryLimit(files({}))).toBeUndefined();
    expect(containerMemoryLimit(files({ '/sys/fs/cgroup/memory.max': 'lots' }))).toBeUndefined();
  });
});

describe("one LIST's memory budget", () => {
  it("is a quarter of the container's memory when that is below the worker's heap limit", () => {
    expect(LIST_SHARE_OF_CONTAINER_MEMORY).toBe(0.25);
    // The chart's 512 Mi against the worker's default 2 GiB heap: 128 MiB, not 2 GiB.
    expect(listMemoryBudget(2048 * MiB, 512 * MiB)).toBe(128 * MiB);
  });

  it("is the worker's heap limit when that is lower, or when there is no container limit", () => {
    expect(listMemoryBudget(64 * MiB, 8192 * MiB)).toBe(64 * MiB);
    expect(listMemoryBudget(1024 * MiB, undefined)).toBe(1024 * MiB);
  });
});
