import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  authorizeAdmin,
  bearerToken,
  checkBrowserRequest,
  isLoopback,
} from '../../src/service/admin-auth.js';

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

describe("README's loopback rule", () => {
  it('names exactly the peers isLoopback accepts, and not the rest of 127.0.0.0/8', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const rule = readme.slice(
      readme.indexOf('**Who may POST.**'),
      readme.indexOf('- **Install.**'),
    );
    expect(rule).toContain('exactly `127.0.0.1` or `::1` (also as IPv4-mapped `::ffff:127.0.0.1`)');
    expect(rule).toContain('not the rest of `127.0.0.0/8`');
    for (const peer of ['127.0.0.1', '::1', '::ffff:127.0.0.1'])
      expect(isLoopback(peer)).toBe(true);
    for (const peer of ['127.0.0.6', '127.1.2.3', '::ffff:127.0.0.6']) {
      expect(isLoopback(peer)).toBe(false);
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

describe('checkBrowserRequest (loopback-only mode)', () => {
  const none = new Set<string>();
  const curl = { host: 'localhost:8080', origin: undefined, contentType: undefined };

  it('admits what curl and kubectl port-forward clients send', () => {
    for (const host of [
      'localhost:8080',
      'LOCALHOST',
      '127.0.0.1:9000',
      '[::1]:8080',
      'app.localhost',
    ]) {
      expect(checkBrowserRequest({ ...curl, host }, none), host).toEqual({ allowed: true });
    }
    expect(
      checkBrowserRequest({ ...curl, contentType: 'application/json; charset=utf-8' }, none),
    ).toEqual({ allowed: true });
    expect(checkBrowserRequest({ ...curl, origin: 'http://localhost:8080' }, none)).toEqual({
      allowed: true,
    });
  });

  it('refuses a Host that does not name loopback, as a DNS-rebound page sends, with a 403', () => {
    for (const host of [
      'evil.example:8080',
      '127.0.0.1.nip.io',
      'localhost.evil.example',
      '',
      undefined,
    ]) {
      const decision = checkBrowserRequest({ ...curl, host }, none);
      expect(decision, String(host)).toMatchObject({ allowed: false, status: 403 });
      expect((decision as { message: string }).message).toContain(
        'want a Host header naming loopback',
      );
    }
  });

  it('admits a configured host name too', () => {
    expect(
      checkBrowserRequest({ ...curl, host: 'ctl.internal:80' }, new Set(['ctl.internal'])),
    ).toEqual({
      allowed: true,
    });
  });

  it('refuses an Origin other than the server itself with a 403', () => {
    for (const origin of ['https://evil.example', 'null', 'http://localhost:3000', 'file://']) {
      const decision = checkBrowserRequest({ ...curl, origin }, none);
      expect(decision, origin).toMatchObject({ allowed: false, status: 403 });
      expect((decision as { message: string }).message).toContain('on another origin');
    }
  });

  it('refuses a body a cross-site form can send (text/plain, forms, multipart) with a 415', () => {
    for (const contentType of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const decision = checkBrowserRequest({ ...curl, contentType }, none);
      expect(decision, contentType).toMatchObject({ allowed: false, status: 415 });
    }
  });

  it('is not asked when a token is configured', () => {
    expect(
      authorizeAdmin('t0k', 'Bearer t0k', '127.0.0.1', {
        headers: {
          host: 'evil.example',
          origin: 'https://evil.example',
          contentType: 'text/plain',
        },
        allowedHosts: none,
      }),
    ).toEqual({ allowed: true });
  });
});

describe('bearerToken', () => {
  it('reads the token of a Bearer header, as the previous pattern did', () => {
    expect(bearerToken('Bearer t0k')).toBe('t0k');
    expect(bearerToken('bearer \t t0k \t')).toBe('t0k');
    for (const bad of [
      'Bearer',
      'Bearer ',
      'Bearer  ',
      'Bearert0k',
      'Basic t0k',
      'Bearer a b',
      '',
    ]) {
      expect(bearerToken(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it('takes linear time on a hostile header', () => {
    const started = performance.now();
    expect(bearerToken(`Bearer ${'a'.repeat(100_000)} ${'\t'.repeat(100_000)}x`)).toBeUndefined();
    // Linear is well under a millisecond per 100k characters; a backtracking (quadratic) parse
    // of these 200k takes minutes. The bound is far from both, so a loaded machine cannot fail it.
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
