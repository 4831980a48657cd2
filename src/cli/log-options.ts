/**
 * How the service's log lines look, for the two readers they have. Log collectors (Loki,
 * Elasticsearch, Cloud Logging) read JSON lines and expect `time` as ISO 8601 and `level` as a
 * word; pino's defaults are epoch milliseconds and a number. People read the pretty format, one
 * line per event, so `kubectl logs | grep` keeps an event whole.
 *
 * A network failure (a refused connection, a reset, a DNS miss, a TLS refusal) is an event about
 * the network, not about this program: logged as its code and message, without a stack that only
 * shows Node's socket internals and pushes the next events off the screen. Every other error
 * keeps its stack.
 */
import { type LoggerOptions, stdSerializers, stdTimeFunctions } from 'pino';

/**
 * The codes of errors that say the network or the peer failed: Node's system errors
 * (ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND, EAI_AGAIN, EPIPE, EHOSTUNREACH, …), undici's
 * (UND_ERR_SOCKET, UND_ERR_CONNECT_TIMEOUT, …) and TLS verification's (CERT_HAS_EXPIRED,
 * DEPTH_ZERO_SELF_SIGNED_CERT, UNABLE_TO_VERIFY_LEAF_SIGNATURE, ERR_TLS_CERT_ALTNAME_INVALID, …).
 */
const NETWORK_ERROR_CODE =
  /^(?:E(?:CONN|HOST|NET|PIPE|TIMEDOUT|NOTFOUND|AI_|ADDR|PROTO)[A-Z_]*|UND_ERR_[A-Z_]+|ERR_TLS_[A-Z_]+|ERR_SSL_[A-Z_]+|CERT_[A-Z_]+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_[A-Z_]+)$/;

/** True for an error whose `code` (or its cause's) says the network failed. */
export function isNetworkError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 3; depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_ERROR_CODE.test(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The network error's code, from it or its cause. */
function networkCode(error: { code?: unknown; cause?: unknown }): string {
  const own = error.code;
  if (typeof own === 'string' && NETWORK_ERROR_CODE.test(own)) return own;
  return networkCode((error.cause ?? {}) as { code?: unknown; cause?: unknown });
}

/** pino's `err` serializer, with network errors shortened to type, code and message. */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return stdSerializers.err(error as Error);
  if (!isNetworkError(error)) return stdSerializers.err(error);
  return { type: error.name, code: networkCode(error), message: error.message };
}

/**
 * The pino options of the service's logger at `level`. JSON lines carry an ISO 8601 `time` and a
 * `level` word; the pretty format keeps pino's numbers, which pino-pretty turns into its own
 * time and coloured level.
 */
export function serviceLoggerOptions(level: string, format: 'json' | 'pretty'): LoggerOptions {
  const common: LoggerOptions = {
    name: 'pool-controller',
    level,
    serializers: { err: serializeError },
  };
  if (format === 'pretty') {
    return {
      ...common,
      serializers: { err: serializeError, [PRETTY_ERROR_KEY]: serializeError },
      formatters: { log: moveErrorForPretty },
    };
  }
  return {
    ...common,
    timestamp: stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
}

/**
 * Where the pretty format carries an error: pino-pretty prints its error keys (`err`, and any
 * `errorLikeObjectKeys`) after the line, the stack one frame a line, even with `singleLine`. Under
 * this key, which is not one of them, an error is a field like any other: JSON on the record's one
 * line, its stack's line breaks escaped as `\n`.
 */
const PRETTY_ERROR_KEY = 'error';

/**
 * The pretty format's `formatters.log`: a record's `err` moves to `PRETTY_ERROR_KEY` (unless that
 * is taken, when it stays and pino-pretty prints it on lines of its own).
 */
function moveErrorForPretty(object: Record<string, unknown>): Record<string, unknown> {
  if (!('err' in object) || PRETTY_ERROR_KEY in object) return object;
  const { err, ...rest } = object;
  return { ...rest, [PRETTY_ERROR_KEY]: err };
}

/**
 * pino-pretty's options: one line per event, its fields after the message, so `grep` keeps an
 * event whole. Only `err` is an error key (pino names it, whatever this says), and it never
 * reaches pino-pretty (`PRETTY_ERROR_KEY`); a line break inside a message is written `\n`.
 */
export const PRETTY_OPTIONS = {
  singleLine: true,
  errorLikeObjectKeys: ['err'],
  messageFormat: (log: Record<string, unknown>, messageKey: string): string => {
    const message = log[messageKey];
    return message === undefined ? '' : String(message).replace(/\r?\n/g, '\\n');
  },
};
