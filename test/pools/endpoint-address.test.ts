import { describe, expect, it } from 'vitest';
import { ipRefusal, parseIp } from '../../src/pools/endpoint-address.js';

describe('endpoint addresses', () => {
  it('parses IPv4 and IPv6 and writes IPv6 in one canonical form', () => {
    expect(parseIp('10.0.0.7')).toEqual({ ip: '10.0.0.7', family: 'IPv4' });
    expect(parseIp('FD00:0::0:1')).toEqual({ ip: 'fd00::1', family: 'IPv6' });
    expect(parseIp('fd00::1')).toEqual(parseIp('FD00:0000::0001'));
  });

  it('refuses to parse what is not an IP: a hostname, a port, an empty text', () => {
    expect(parseIp('engine.local')).toBeUndefined();
    expect(parseIp('10.0.0.1:80')).toBeUndefined();
    expect(parseIp('')).toBeUndefined();
    expect(parseIp('[fd00::1]')).toBeUndefined();
  });

  it('refuses what the API server refuses in an EndpointSlice: loopback, unspecified, link-local', () => {
    const refusal = (text: string) => ipRefusal(parseIp(text)!);
    expect(refusal('127.0.0.1')).toBe('loopback');
    expect(refusal('127.8.9.10')).toBe('loopback');
    expect(refusal('::1')).toBe('loopback');
    expect(refusal('::ffff:127.0.0.1')).toBe('loopback');
    expect(refusal('0.0.0.0')).toBe('unspecified');
    expect(refusal('::')).toBe('unspecified');
    expect(refusal('169.254.1.2')).toBe('link-local');
    expect(refusal('fe80::1')).toBe('link-local');
    expect(refusal('224.0.0.251')).toBe('link-local multicast');
    expect(refusal('ff02::1')).toBe('link-local multicast');
    expect(refusal('10.0.0.1')).toBeUndefined();
    expect(refusal('fd00::1')).toBeUndefined();
    expect(refusal('::ffff:10.0.0.1')).toBeUndefined();
  });
});
