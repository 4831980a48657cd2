/**
 * A loopback port nobody listens on right now, found by letting the kernel pick one. Another
 * process could take it before ours binds it; on a test machine that race is rare enough, and a
 * clash shows up as a clear "address already in use" in the process log.
 */
import { createServer } from 'node:net';

export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('e2e: could not read the port the kernel picked'));
      });
    });
  });
}
