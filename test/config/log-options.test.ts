/**
 * The service's log lines (src/cli/log-options.ts): JSON with an ISO 8601 `time` and a `level`
 * word, as log collectors expect; network errors as code and message without a stack; every other
 * error with its stack; the pretty format one line per record, errors included.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import pretty from 'pino-pretty';
import { describe, expect, it } from 'vitest';
import {
  isNetworkError,
  PRETTY_OPTIONS,
  serializeError,
  serviceLoggerOptions,
} from '../../src/cli/log-options.js';
import { until } from '../support/until.js';

function oneLine(level: string, write: (logger: pino.Logger) => void): Record<string, unknown> {
  const lines: string[] = [];
  write(pino(serviceLoggerOptions(level, 'json'), { write: (line: string) => lines.push(line) }));
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

function systemError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('JSON log lines', () => {
  it('carry an ISO 8601 time, a level word and the service name', () => {
    const line = oneLine('info', (logger) => logger.warn({ pool: 'engine' }, 'something happened'));
    expect(line.level).toBe('warn');
    expect(typeof line.time).toBe('string');
    expect(new Date(line.time as string).toISOString()).toBe(line.time);
    expect(line).toMatchObject({
      name: 'pool-controller',
      pool: 'engine',
      msg: 'something happened',
    });
  });

  it('log a network error as its type, code and message, without a stack', () => {
    const err = systemError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6443');
    const line = oneLine('info', (logger) => logger.error({ err }, 'list failed'));
    expect(line.err).toEqual({
      type: 'Error',
      code: 'ECONNREFUSED',
      message: 'connect ECONNREFUSED 127.0.0.1:6443',
    });
  });

  it('keep the stack of any other error', () => {
    const line = oneLine('info', (logger) => logger.error({ err: new TypeError('bad') }, 'bug'));
    expect(line.err).toMatchObject({ type: 'TypeError', message: 'bad' });
    expect((line.err as { stack: string }).stack).toContain('TypeError: bad');
  });
});

describe('isNetworkError', () => {
  it('knows system, undici and TLS codes, on the error or its cause', () => {
    for (const code of [
      'ECONNRESET',
      'ETIMEDOUT',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EPIPE',
      'EHOSTUNREACH',
    ]) {
      expect(isNetworkError(systemError(code, code)), code).toBe(true);
    }
    expect(isNetworkError(systemError('UND_ERR_SOCKET', 'other side closed'))).toBe(true);
    expect(isNetworkError(systemError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed'))).toBe(true);
    const fetchFailure = new TypeError('fetch failed', {
      cause: systemError('ECONNREFUSED', 'connect ECONNREFUSED'),
    });
    expect(isNetworkError(fetchFailure)).toBe(true);
    expect(serializeError(fetchFailure)).toEqual({
      type: 'TypeError',
      code: 'ECONNREFUSED',
      message: 'fetch failed',
    });
  });

  it('leaves programming and file errors alone', () => {
    expect(isNetworkError(new RangeError('out of range'))).toBe(false);
    expect(isNetworkError(systemError('ENOENT', 'no such file'))).toBe(false);
    expect(isNetworkError(systemError('ERR_INVALID_ARG_TYPE', 'bad arg'))).toBe(false);
    expect(isNetworkError('a string')).toBe(false);
  });
});

/** What the pretty format writes for `write`, as main builds it (without colour, for a pipe). */
async function prettyOutput(write: (logger: pino.Logger) => void): Promise<string> {
  let text = '';
  const destination = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const stream = pretty({ ...PRETTY_OPTIONS, sync: true, colorize: false, destination });
  write(pino(serviceLoggerOptions('info', 'pretty'), stream));
  await until(() => text.length > 0, { what: 'the pretty output' });
  return text;
}

describe('pretty log lines', () => {
  it('put each record on one line, an error with its stack and cause included', async () => {
    const err = new Error('list failed\nwith a second line', { cause: new Error('inner') });
    const text = await prettyOutput((logger) => {
      logger.error({ err, pool: 'engine' }, 'reflector stream failed');
      logger.warn(new Error('a bare error'));
      logger.info('a message\nover two lines');
      logger.info({ cells: 3 }, 'synced');
    });
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(
      /ERROR \(pool-controller\/\d+\): reflector stream failed \{.*"pool":"engine"/,
    );
    expect(lines[0]).toContain('"message":"list failed\\nwith a second line: inner"');
    expect(lines[0]).toContain('"stack":"Error: list failed\\nwith a second line\\n    at ');
    expect(lines[0]).toContain('caused by: Error: inner');
    expect(lines[1]).toMatch(
      /WARN \(pool-controller\/\d+\): a bare error \{"error":\{"type":"Error"/,
    );
    expect(lines[2]).toMatch(/INFO \(pool-controller\/\d+\): a message\\nover two lines/);
    expect(lines[3]).toMatch(/INFO \(pool-controller\/\d+\): synced \{"cells":3\}$/);
  });

  it('keep a network error short on its one line', async () => {
    const err = systemError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6443');
    const text = await prettyOutput((logger) => logger.warn({ err }, 'list failed'));
    expect(text.trimEnd().split('\n')).toEqual([
      expect.stringMatching(
        /: list failed \{"error":\{"type":"Error","code":"ECONNREFUSED","message":"connect ECONNREFUSED 127\.0\.0\.1:6443"\}\}$/,
      ),
    ]);
  });
});
