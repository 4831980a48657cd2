/**
 * The real-cluster lane's pod-IP range check, on its own: it is what keeps every test's traffic on
 * this machine, so it must fail on any address outside the range, and on anything it cannot parse.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  assertPodIpsInRange,
  ipInRange,
  LANE_POD_RANGE,
  nodePodCidr,
  podIpsOutOfRange,
  TEST_NET_POD_RANGE,
} from './real-cluster.js';

const pod = (name: string, ips: string[]): V1Pod => ({
  metadata: { name, namespace: 'ns' },
  status: { ...(ips[0] ? { podIP: ips[0] } : {}), podIPs: ips.map((ip) => ({ ip })) },
});

describe('the lane pod-IP range', () => {
  it('holds every node podCIDR the harness hands out', () => {
    for (const index of [0, 1, 63, 200]) {
      const [base] = nodePodCidr(index).split('/');
      expect(ipInRange(base!, LANE_POD_RANGE)).toBe(true);
    }
  });

  it('takes loopback addresses and refuses everything else', () => {
    expect(ipInRange('127.0.0.1', LANE_POD_RANGE)).toBe(true);
    expect(ipInRange('127.255.255.254', LANE_POD_RANGE)).toBe(true);
    for (const ip of [
      '10.0.0.1',
      '128.0.0.1',
      '126.255.255.255',
      '192.0.2.1',
      '::1',
      '127.1',
      '',
    ]) {
      expect(ipInRange(ip, LANE_POD_RANGE), ip).toBe(false);
    }
    expect(ipInRange('10.0.1.4', '10.0.0.0/24')).toBe(false);
    expect(ipInRange('10.0.0.255', '10.0.0.0/24')).toBe(true);
  });

  it('the TEST-NET range ends with its /24: a pod past it (kwok spilling over) is outside', () => {
    expect(ipInRange('192.0.2.1', TEST_NET_POD_RANGE)).toBe(true);
    expect(ipInRange('192.0.2.254', TEST_NET_POD_RANGE)).toBe(true);
    expect(() => assertPodIpsInRange([pod('spilled', ['192.0.3.0'])], TEST_NET_POD_RANGE)).toThrow(
      /192\.0\.3\.0/,
    );
    expect(() =>
      assertPodIpsInRange([pod('loopback', ['127.16.0.1'])], TEST_NET_POD_RANGE),
    ).toThrow();
  });

  it('names each pod with an IP outside the range, podIPs included', () => {
    const pods = [
      pod('inside', ['127.16.0.3']),
      pod('pending', []),
      pod('second-ip', ['127.16.0.4', '10.0.0.9']),
      pod('outside', ['10.0.1.4']),
    ];
    expect(podIpsOutOfRange(pods)).toEqual(['ns/second-ip 10.0.0.9', 'ns/outside 10.0.1.4']);
    expect(() => assertPodIpsInRange(pods)).toThrow(/ns\/outside 10\.0\.1\.4/);
    expect(() => assertPodIpsInRange(pods.slice(0, 2))).not.toThrow();
  });
});
