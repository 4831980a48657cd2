/**
 * The ports the environment hands its binaries: free, distinct, and never from the kernel's
 * ephemeral range, where an outgoing connection could take one before the binary binds it.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freeLoopbackPort } from './free-port.js';

function ephemeralLow(): number {
  const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
    .trim()
    .split(/\s+/)
    .map(Number);
  return low ?? 32_768;
}

describe('freeLoopbackPort', () => {
  it('hands out distinct ports below the ephemeral range that a listener can bind', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freeLoopbackPort()));
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow());
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
