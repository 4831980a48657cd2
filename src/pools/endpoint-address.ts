/**
 * What an endpoint address may be: a pod IP parsed as an IP (`net.isIP`), in one canonical text,
 * and judged by the rule the API server applies to an EndpointSlice endpoint (its
 * ValidateEndpointIP). Every sink routes by the same judgement, so a pod status that points at a
 * node's own loopback or link-local range is never honoured by a router either: an SGLang router
 * told to send traffic to `127.0.0.1` would send it to itself.
 */
import { isIP } from 'node:net';

/** Why an IP may not be an endpoint; `undefined` when it may. */
type IpRefusal = 'loopback' | 'unspecified' | 'link-local' | 'link-local multicast';

/** A parsed IP: its canonical text and family. */
interface ParsedIp {
  /** IPv4 dotted decimal, or IPv6 compressed lowercase (the URL parser's form). */
  ip: string;
  family: 'IPv4' | 'IPv6';
}

/**
 * `text` as an IP in canonical form, or `undefined` when it is not one. Two spellings of one IPv6
 * address (`fd00::0:1`, `FD00::1`) give the same text, so an address clash is found whatever the
 * pod status wrote.
 */
export function parseIp(text: string): ParsedIp | undefined {
  const version = isIP(text);
  if (version === 4) return { ip: text, family: 'IPv4' };
  if (version === 6) {
    return { ip: new URL(`http://[${text}]/`).hostname.slice(1, -1), family: 'IPv6' };
  }
  return undefined;
}

/** Why the API server refuses `ip` (canonical, see `parseIp`) as an endpoint, if it does. */
export function ipRefusal({ ip, family }: ParsedIp): IpRefusal | undefined {
  if (family === 'IPv4') {
    const [a, b, c] = ip.split('.').map(Number) as [number, number, number, number];
    if (a === 127) return 'loopback';
    if (ip === '0.0.0.0') return 'unspecified';
    if (a === 169 && b === 254) return 'link-local';
    if (a === 224 && b === 0 && c === 0) return 'link-local multicast';
    return undefined;
  }
  if (ip === '::1') return 'loopback';
  if (ip === '::') return 'unspecified';
  // The URL parser writes an IPv4-mapped address as `::ffff:7f00:1`.
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(ip);
  if (mapped?.[1] && mapped[2]) {
    const high = Number.parseInt(mapped[1], 16);
    const low = Number.parseInt(mapped[2], 16);
    const v4 = [high >> 8, high & 255, low >> 8, low & 255].join('.');
    return ipRefusal({ ip: v4, family: 'IPv4' });
  }
  if (/^fe[89ab][0-9a-f]:/.test(ip)) return 'link-local';
  if (/^ff02:/.test(ip)) return 'link-local multicast';
  return undefined;
}
