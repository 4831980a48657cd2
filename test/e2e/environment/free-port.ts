/**
 * A loopback port nobody listens on right now, for a test binary (etcd, kube-apiserver, a router)
 * to bind a moment later.
 *
 * Chosen below the kernel's ephemeral range, not by letting the kernel pick one: a port the
 * kernel picks is an ephemeral one, and between our check and the binary's bind the kernel may
 * hand the same port to an outgoing connection as its source port (the e2e suite opens thousands),
 * which makes the binary fail with "address already in use" (seen in CI: etcd's client port).
 * Ports below the range are never given to outgoing connections, so only another listener could
 * take one, and each pick is random and checked by binding it, and never handed out twice by this
 * process.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port picked: above the well-known and most registered service ports. */
const LOWEST_PORT = 10_000;
/** Linux's default ephemeral range starts here; used when the range cannot be read. */
const DEFAULT_EPHEMERAL_LOW = 32_768;
/** Random picks tried before falling back to a port the kernel chooses. */
const ATTEMPTS = 50;

/** Ports this process handed out already: two binaries of one test never get the same. */
const handedOut = new Set<number>();

/** The first port of the kernel's ephemeral range (Linux), or the default elsewhere. */
function ephemeralLow(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    return low !== undefined && Number.isInteger(low) && low > LOWEST_PORT + 1_000
      ? low
      : DEFAULT_EPHEMERAL_LOW;
  } catch {
    return DEFAULT_EPHEMERAL_LOW;
  }
}

/** Binds `port` (0: the kernel's choice) on loopback and releases it: the port, or an error. */
function bindAndRelease(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('e2e: could not read the port bound'));
      });
    });
  });
}

export async function freeLoopbackPort(): Promise<number> {
  const high = ephemeralLow() - 1;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (high - LOWEST_PORT + 1));
    if (handedOut.has(port)) continue;
    // Reserved before the check, so that a concurrent call cannot pick it meanwhile.
    handedOut.add(port);
    try {
      await bindAndRelease(port);
      return port;
    } catch {
      handedOut.delete(port); // in use: pick another
    }
  }
  const port = await bindAndRelease(0);
  handedOut.add(port);
  return port;
}
