/**
 * What one bench variant cost ANOTHER process (the API server, etcd): CPU seconds and peak
 * resident memory over a window, read from Linux's /proc. The issue behind bench:peers asks that
 * our initial sync must not cost the API server more than client-go's; a client's own numbers
 * cannot show that.
 *
 * Peak RSS is exact where the kernel allows it: writing `5` to /proc/<pid>/clear_refs resets the
 * process's high-water mark (VmHWM), so the mark read at the window's end is that window's peak.
 * Where that write is refused the window's peak is sampled every {@link RSS_SAMPLE_MS} instead,
 * and the result says so.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/**
 * Ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ). Linux fixes it at 100 on
 * every architecture Node runs on; reading it would need sysconf, which Node does not expose.
 */
const USER_HZ = 100;
/** Sampling period when the high-water mark cannot be reset: fine enough for a ~1 s sync. */
const RSS_SAMPLE_MS = 10;

/** A window's cost to one process. */
export interface ProcessCostResult {
  /** User + system CPU seconds the process spent inside the window. */
  readonly cpuSeconds: number;
  /** Resident memory when the window opened, bytes. */
  readonly rssBeforeBytes: number;
  /** Highest resident memory inside the window, bytes. */
  readonly peakRssBytes: number;
  /** `hwm`: the kernel's reset high-water mark (exact); `sampled`: every RSS_SAMPLE_MS. */
  readonly peakFrom: 'hwm' | 'sampled';
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), counted from field 3 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime (14), stime (15)
}

function statusKib(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
    readFileSync(`/proc/${pid}/status`, 'utf8'),
  );
  if (!match) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(match[1]);
}

/** The CPU seconds (user + system, every thread) `pid` has spent since it started. */
export function processCpuSeconds(pid: number): number {
  return cpuTicks(pid) / USER_HZ;
}

/** `pid`'s resident memory now, bytes. */
export function processRssBytes(pid: number): number {
  return statusKib(pid, 'VmRSS') * 1024;
}

/** Opens a window on `pid` now; `stop()` closes it and answers what the process spent in it. */
export function startProcessCost(pid: number): { stop(): ProcessCostResult } {
  const ticksBefore = cpuTicks(pid);
  const rssBeforeKib = statusKib(pid, 'VmRSS');
  let peakFrom: ProcessCostResult['peakFrom'] = 'hwm';
  let sampledPeakKib = rssBeforeKib;
  let sampler: NodeJS.Timeout | undefined;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    peakFrom = 'sampled';
    sampler = setInterval(() => {
      sampledPeakKib = Math.max(sampledPeakKib, statusKib(pid, 'VmRSS'));
    }, RSS_SAMPLE_MS);
  }
  return {
    stop(): ProcessCostResult {
      if (sampler) clearInterval(sampler);
      const peakKib =
        peakFrom === 'hwm'
          ? statusKib(pid, 'VmHWM')
          : Math.max(sampledPeakKib, statusKib(pid, 'VmRSS'));
      return {
        cpuSeconds: (cpuTicks(pid) - ticksBefore) / USER_HZ,
        rssBeforeBytes: rssBeforeKib * 1024,
        peakRssBytes: peakKib * 1024,
        peakFrom,
      };
    },
  };
}

/** The pid a ManagedProcess of the e2e environment recorded for `name` (e.g. `kube-apiserver`). */
export function environmentPid(stateDir: string, name: string): number {
  const pid = Number(readFileSync(`${stateDir}/pids/${name}.pid`, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid recorded for ${name}`);
  return pid;
}
