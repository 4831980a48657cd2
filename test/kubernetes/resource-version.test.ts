import { describe, expect, it } from 'vitest';
import {
  compareResourceVersions,
  isComparableResourceVersion,
  MAX_RESOURCE_VERSION,
} from '../../src/kubernetes/reflector/resource-version.js';

describe('resourceVersions compared as KEP-5504 says', () => {
  it.each([
    ['9', '10', -1],
    ['10', '9', 1],
    ['39760', '40760', -1],
    ['40760', '40760', 0],
    ['123456789012345678901234567890', '123456789012345678901234567891', -1],
    // Beyond a double's exact integers: Number() would call these equal.
    ['9007199254740993', '9007199254740992', 1],
    [MAX_RESOURCE_VERSION, '1', 1],
  ])('orders %s against %s by length, then lexically', (a, b, sign) => {
    expect(Math.sign(compareResourceVersions(a, b) ?? Number.NaN)).toBe(sign);
  });

  it.each([
    '',
    '0',
    '010',
    '-5',
    '1e3',
    ' 12',
    '12 ',
    'abc',
    '١٢',
    '340282366920938463463374607431768211456',
    '1000000000000000000000000000000000000000',
  ])('cannot order %j against a version, so says undefined', (odd) => {
    expect(isComparableResourceVersion(odd)).toBe(false);
    expect(compareResourceVersions(odd, '5')).toBeUndefined();
    expect(compareResourceVersions('5', odd)).toBeUndefined();
  });

  it('accepts every decimal up to 2^128 − 1', () => {
    expect(isComparableResourceVersion('1')).toBe(true);
    expect(isComparableResourceVersion(MAX_RESOURCE_VERSION)).toBe(true);
    expect(isComparableResourceVersion('340282366920938463463374607431768211454')).toBe(true);
    expect(BigInt(MAX_RESOURCE_VERSION)).toBe(2n ** 128n - 1n);
  });
});
