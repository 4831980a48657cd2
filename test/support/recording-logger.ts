/**
 * A `Logger` that keeps every entry, so a test can assert that something was logged, at which
 * level, and that the entry carries the error or key it is about.
 */
import type { Logger } from '../../src/index.js';

export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface LogEntry {
  level: Level;
  obj: unknown;
  msg: string | undefined;
}

/** Whether `needle` (an object by identity, or a string by substring) occurs anywhere in `value`. */
function contains(value: unknown, needle: unknown, seen = new Set<unknown>()): boolean {
  if (value === needle) return true;
  if (typeof needle === 'string' && typeof value === 'string') return value.includes(needle);
  if (needle instanceof Error && value instanceof Error && value.message === needle.message) {
    return true;
  }
  if (value === null || typeof value !== 'object' || seen.has(value)) return false;
  seen.add(value);
  if (value instanceof Error) {
    return (
      contains(value.message, needle, seen) ||
      contains((value as { cause?: unknown }).cause, needle, seen)
    );
  }
  return Object.values(value).some((v) => contains(v, needle, seen));
}

export class RecordingLogger implements Logger {
  readonly entries: LogEntry[] = [];

  debug(obj?: unknown, msg?: string): void {
    this.entries.push({ level: 'debug', obj, msg });
  }
  info(obj?: unknown, msg?: string): void {
    this.entries.push({ level: 'info', obj, msg });
  }
  warn(obj?: unknown, msg?: string): void {
    this.entries.push({ level: 'warn', obj, msg });
  }
  error(obj?: unknown, msg?: string): void {
    this.entries.push({ level: 'error', obj, msg });
  }

  at(level: Level): LogEntry[] {
    return this.entries.filter((e) => e.level === level);
  }

  /** Entries (at `level`, or any) whose object or message carries `needle`. */
  mentioning(needle: unknown, level?: Level): LogEntry[] {
    return this.entries.filter(
      (e) =>
        (level === undefined || e.level === level) &&
        (contains(e.obj, needle) || (typeof needle === 'string' && contains(e.msg, needle))),
    );
  }
}
