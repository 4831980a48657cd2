import { describe, expect, it } from 'vitest';
import { ResourceApiError } from '../../src/kubernetes/client/resource-api-error.js';

const apply = { verb: 'APPLY', resource: 'pods/status', target: 'ns/p' } as const;

describe('ResourceApiError', () => {
  it('names the verb, the resource, the target and the server’s Status', () => {
    const error = ResourceApiError.refused(apply, 422, { reason: 'Invalid', message: 'bad field' });
    expect(error.message).toBe('APPLY pods/status ns/p: HTTP 422 Invalid: bad field');
    expect(error).toMatchObject({ name: 'ResourceApiError', statusCode: 422, reason: 'Invalid' });
  });

  it('says only the status when the server gave no Status', () => {
    expect(ResourceApiError.refused(apply, 500).message).toBe('APPLY pods/status ns/p: HTTP 500');
  });

  it('calls throttling, timeouts and server errors retriable, and refusals not', () => {
    const retriable = (code: number): boolean => ResourceApiError.refused(apply, code).retriable;
    expect([408, 429, 500, 503, 504].map(retriable)).toEqual([true, true, true, true, true]);
    expect([400, 403, 404, 409, 422].map(retriable)).toEqual([false, false, false, false, false]);
  });

  it('tells an unreadable answer apart by its missing status, and never calls it retriable', () => {
    const error = ResourceApiError.malformed(apply, 'the answer is not a pod');
    expect(error.message).toBe('APPLY pods/status ns/p: the answer is not a pod');
    expect(error).toMatchObject({
      statusCode: undefined,
      reason: 'MalformedAnswer',
      retriable: false,
    });
  });

  it('redacts a credential the server quoted back', () => {
    const error = ResourceApiError.refused(apply, 401, {
      reason: 'Unauthorized',
      message: 'token rejected: Bearer abc.def.ghi\nsecond line',
    });
    expect(error.message).not.toContain('abc.def.ghi');
    expect(error.message).not.toContain('second line');
  });
});
