/**
 * The logging surface the runtime needs: pino's four levels with an optional structured object
 * first. A pino logger fits as is; the runtime never imports pino, so it stays dependency-free.
 */
export interface Logger {
  debug(obj?: unknown, msg?: string): void;
  info(obj?: unknown, msg?: string): void;
  warn(obj?: unknown, msg?: string): void;
  error(obj?: unknown, msg?: string): void;
}

const discard = (): void => {};

/** Used when the caller gives no logger: logging is opt-in, never a crash. */
export const silentLogger: Logger = {
  debug: discard,
  info: discard,
  warn: discard,
  error: discard,
};
