/**
 * Request logs go to `debug` (src/http/request-log.ts): at the default `info` a polled status page
 * or API adds nothing to the log; at `debug` each request is its two lines again; a failed request
 * is still an error at any level. Probes and scrapes stay unlogged, as before.
 */

import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { serviceLoggerOptions } from '../../src/cli/log-options.js';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

/** A JSON logger at `level` whose lines land in `lines`. */
function capturingLogger(level: string): {
  logger: pino.Logger;
  lines: Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(serviceLoggerOptions(level, 'json'), {
    write: (line: string) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { logger, lines };
}

const requestLines = (lines: Array<Record<string, unknown>>) =>
  lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed');

describe('request logging', () => {
  it('logs nothing of a successful request at info', async () => {
    const { logger, lines } = capturingLogger('info');
    const { app } = await harness({ server: { logger } });
    expect((await app.inject({ url: '/api/v1/cells' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    expect(requestLines(lines)).toEqual([]);
  });

  it('logs each request at debug, its two lines with the level word', async () => {
    const { logger, lines } = capturingLogger('debug');
    const { app } = await harness({ server: { logger } });
    await app.inject({ url: '/api/v1/cells' });
    expect(requestLines(lines).map((l) => [l.level, l.msg])).toEqual([
      ['debug', 'incoming request'],
      ['debug', 'request completed'],
    ]);
  });

  it('keeps probes and scrapes out of the log even at debug', async () => {
    const { logger, lines } = capturingLogger('debug');
    const { app } = await harness({ server: { logger } });
    await app.inject({ url: '/healthz' });
    await app.inject({ url: '/metrics' });
    expect(requestLines(lines)).toEqual([]);
  });
});
