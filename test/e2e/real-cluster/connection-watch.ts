/**
 * Proof that nothing on this machine talks to a range: samples the kernel's TCP socket tables
 * (/proc/net/tcp and tcp6, every process's sockets, listening ones included) and records every
 * socket whose remote address is inside the range. The lane's TEST-NET pod IPs are published (an
 * EndpointSlice takes no loopback address) but must never be connected to: a connection attempt
 * leaves a SYN_SENT socket for as long as the kernel retries, which a sample every 100 ms sees.
 */
import { readFileSync } from 'node:fs';
import { ipInRange } from '../environment/real-cluster.js';

/** How often the socket tables are read. */
const SAMPLE_EVERY_MS = 100;

/** The IPv4 address of a /proc/net/tcp `hex:port` field (little-endian), or of a v4-mapped tcp6 one. */
export function remoteIpv4(field: string): string | undefined {
  const [hex] = field.split(':');
  if (!hex) return undefined;
  // tcp6: 32 hex digits; a v4-mapped address ends in its IPv4 address (::ffff:a.b.c.d).
  const v4 = hex.length === 32 && hex.startsWith('0000000000000000FFFF0000') ? hex.slice(24) : hex;
  if (v4.length !== 8) return undefined;
  const bytes = (v4.match(/../g) ?? []).map((b) => Number.parseInt(b, 16)).reverse();
  return bytes.join('.');
}

export class ConnectionWatch {
  /** Every socket seen with a remote address in the range, as `remote (table)`. */
  readonly seen = new Set<string>();
  samples = 0;
  readonly #range: string;
  #timer: NodeJS.Timeout | undefined;

  constructor(range: string) {
    this.#range = range;
  }

  start(): void {
    this.sample();
    this.#timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
  }

  /** Reads both tables once. */
  sample(): void {
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      let text = '';
      try {
        text = readFileSync(table, 'utf8');
      } catch {
        continue; // no IPv6 on this machine
      }
      for (const line of text.split('\n').slice(1)) {
        const remote = line.trim().split(/\s+/)[2];
        const ip = remote ? remoteIpv4(remote) : undefined;
        if (ip && ipInRange(ip, this.#range)) this.seen.add(`${ip} (${table})`);
      }
    }
    this.samples += 1;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
