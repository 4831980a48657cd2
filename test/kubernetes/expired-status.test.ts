import { describe, expect, it } from 'vitest';
import type { ApiStatus } from '../../src/kubernetes/client/api-errors.js';
import { isExpiredStatus } from '../../src/kubernetes/client/expired-status.js';

const status = (fields: Partial<ApiStatus>): ApiStatus => ({ causes: [], ...fields });

describe('isExpiredStatus: client-go IsResourceExpired', () => {
  it('reads 410 Gone as expired, whatever its reason', () => {
    expect(isExpiredStatus(status({ code: 410 }))).toBe(true);
    expect(isExpiredStatus(status({ code: 410, reason: 'Whatever' }))).toBe(true);
  });

  it('reads the reasons Expired and Gone as expired, whatever the code', () => {
    expect(isExpiredStatus(status({ code: 200, reason: 'Expired' }))).toBe(true);
    expect(isExpiredStatus(status({ reason: 'Gone' }))).toBe(true);
  });

  it('reads anything else as alive: a 504 from the future, a 429, no status at all', () => {
    expect(isExpiredStatus(status({ code: 504, reason: 'Timeout' }))).toBe(false);
    expect(isExpiredStatus(status({ code: 429, reason: 'TooManyRequests' }))).toBe(false);
    expect(isExpiredStatus(status({}))).toBe(false);
  });
});
