import { describe, expect, it } from 'vitest';
import { authorizeAdmin, isLoopback } from '../../src/service/admin-auth.js';

describe('isLoopback', () => {
  it('accepts exactly 127.0.0.1 and ::1, also IPv4-mapped', () => {
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '::FFFF:7f00:1', '0:0:0:0:0:0:0:1']) {
      expect(isLoopback(a), a).toBe(true);
    }
  });

  it('refuses everything else, including look-alikes', () => {
    for (const a of [
      '10.0.0.1',
      '::ffff:10.0.0.1',
      '1127.0.0.1',
      // A mesh sidecar (Istio) delivers traffic from outside the pod from 127.0.0.6.
      '127.0.0.6',
      '::ffff:127.0.0.6',
      '127.255.0.9',
      '127.0.0.1 ',
      '127.0.0.1.nip.io',
      '::2',
      '',
      undefined,
    ]) {
      expect(isLoopback(a), String(a)).toBe(false);
    }
  });
});

describe('authorizeAdmin', () => {
  it('with a token, wants exactly that bearer token, whatever the address', () => {
    expect(authorizeAdmin('t0k', 'Bearer t0k', '10.0.0.1')).toEqual({ allowed: true });
    expect(authorizeAdmin('t0k', 'bearer   t0k', '10.0.0.1')).toEqual({ allowed: true });
    expect(authorizeAdmin('t0k', undefined, '127.0.0.1')).toMatchObject({
      allowed: false,
      status: 401,
    });
    expect(authorizeAdmin('t0k', 'Bearer t0', '127.0.0.1')).toMatchObject({
      allowed: false,
      status: 401,
    });
    expect(authorizeAdmin('t0k', 'Bearer t0k extra', '127.0.0.1')).toMatchObject({ status: 401 });
  });

  it('without a token, admits loopback peers only, with a 403 saying why', () => {
    expect(authorizeAdmin(undefined, undefined, '::1')).toEqual({ allowed: true });
    expect(authorizeAdmin(undefined, 'Bearer anything', '10.0.0.1')).toMatchObject({
      allowed: false,
      status: 403,
    });
  });
});
