import { describe, expect, it } from 'vitest';
import {
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  readStatus,
  statusFromResponse,
} from '../../src/kubernetes/client/api-errors.js';

describe('readStatus', () => {
  it('reads code, reason, message, causes and retryAfterSeconds', () => {
    expect(
      readStatus({
        kind: 'Status',
        code: 504,
        reason: 'Timeout',
        message: 'Too large resource version',
        details: {
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'x' }],
          retryAfterSeconds: 2,
        },
      }),
    ).toEqual({
      code: 504,
      reason: 'Timeout',
      message: 'Too large resource version',
      causes: ['ResourceVersionTooLarge'],
      retryAfterMs: 2_000,
    });
  });

  it.each([null, 'Expired', 7, [], { code: '410', reason: 5, details: { causes: 'no' } }])(
    'reads %j leniently as a status with nothing known',
    (value) => {
      expect(readStatus(value)).toEqual({ causes: [] });
    },
  );
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it.each<[string | undefined, number | undefined]>([
    ['7', 7_000],
    [' 1 ', 1_000],
    ['0', undefined],
    ['-3', undefined],
    ['soon', undefined],
    [undefined, undefined],
    ['Thu, 01 Jan 2026 00:00:30 GMT', 30_000],
    ['Wed, 31 Dec 2025 23:59:00 GMT', undefined],
    ['86400', MAX_RETRY_AFTER_MS],
  ])('reads %j as %j ms', (header, ms) => {
    expect(parseRetryAfter(header, now)).toBe(ms);
  });
});

describe('statusFromResponse', () => {
  it('takes the HTTP code and Retry-After header over the body', () => {
    const body = JSON.stringify({
      kind: 'Status',
      code: 500,
      reason: 'TooManyRequests',
      details: { retryAfterSeconds: 1 },
    });
    expect(statusFromResponse(429, body, '4')).toEqual({
      code: 429,
      reason: 'TooManyRequests',
      causes: [],
      retryAfterMs: 4_000,
    });
  });

  it('keeps a proxy body that is not a Status as the message', () => {
    expect(statusFromResponse(502, '<html>Bad Gateway</html>', undefined)).toEqual({
      code: 502,
      causes: [],
      message: '<html>Bad Gateway</html>',
    });
  });
});
