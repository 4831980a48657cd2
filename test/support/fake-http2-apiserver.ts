/**
 * A loopback TLS server for the HTTP/2 edge cases of the pod API (../kubernetes/http2-sessions.test.ts):
 * it speaks HTTP/2 (or, built with `http1Only`, only HTTP/1.1, as a proxy in front of an API server
 * may), counts connections and streams, and hands each stream to the test to answer. Its
 * certificate is made by openssl (Node cannot issue X.509 certificates) and is trusted through the
 * kubeconfig it writes. Unit tests only: the e2e layer talks to a real kube-apiserver.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2, {
  type Http2SecureServer,
  type IncomingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import https from 'node:https';
import net, { type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSelfSignedCertificate } from './self-signed-certificate.js';

/** A self-signed certificate for 127.0.0.1, made once per test process. */
let certificate: { key: Buffer; cert: Buffer } | undefined;
function loopbackCertificate(): { key: Buffer; cert: Buffer } {
  if (certificate) return certificate;
  const dir = mkdtempSync(join(tmpdir(), 'pool-controller-h2-'));
  const { certPath, keyPath } = writeSelfSignedCertificate(dir, 'loopback', {
    commonName: '127.0.0.1',
    subjectAltName: 'IP:127.0.0.1',
    days: 2,
  });
  certificate = { key: readFileSync(keyPath), cert: readFileSync(certPath) };
  return certificate;
}

/** One request as the server saw it, and the stream to answer it on. */
export interface ServerStream {
  /** Lower-case headers, pseudo-headers included (`:path`). */
  headers: IncomingHttpHeaders;
  path: string;
  /** The HTTP/2 stream; undefined on an HTTP/1.1 server, which answers with `answer` only. */
  stream: ServerHttp2Stream | undefined;
  /** The connection it came on: 1 for the first. */
  connection: number;
  /** Sends a whole answer and ends it. */
  answer(status: number, body: string | Uint8Array, headers?: Record<string, string>): void;
}

/**
 * The server: every request goes to `onStream` (set by the test), else it is answered 404. A
 * relay in front of it (`url`) can be frozen, so a connection looks alive and says nothing.
 */
export class FakeHttp2ApiServer {
  /** Requests, in arrival order. */
  readonly streams: ServerStream[] = [];
  onStream: ((stream: ServerStream) => void) | undefined;
  readonly #server: Http2SecureServer | https.Server;
  readonly #relay: NetServer;
  /** TCP connections the relay accepted, whether or not TLS then succeeded. */
  readonly #tcp: { accepted: number };
  /** The relay's connection pairs open now. */
  readonly #relayed: Set<{ client: Socket; upstream: Socket }>;
  readonly #sessions: ServerHttp2Session[] = [];
  #connections = 0;
  readonly url: string;
  readonly #cert: Buffer;

  private constructor(
    server: Http2SecureServer | https.Server,
    relay: NetServer,
    relayed: Set<{ client: Socket; upstream: Socket }>,
    tcp: { accepted: number },
    url: string,
    cert: Buffer,
  ) {
    this.#server = server;
    this.#relay = relay;
    this.#relayed = relayed;
    this.#tcp = tcp;
    this.url = url;
    this.#cert = cert;
  }

  /** Starts it on loopback; `http1Only` answers ALPN with HTTP/1.1 only. */
  static async start(options: { http1Only?: boolean } = {}): Promise<FakeHttp2ApiServer> {
    const { key, cert } = loopbackCertificate();
    const server = options.http1Only
      ? https.createServer({ key, cert, ALPNProtocols: ['http/1.1'] })
      : http2.createSecureServer({ key, cert });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const upstreamPort = (server.address() as AddressInfo).port;
    const relayed = new Set<{ client: Socket; upstream: Socket }>();
    const tcp = { accepted: 0 };
    const relay = net.createServer((client) => {
      const upstream = net.connect(upstreamPort, '127.0.0.1');
      const pair = { client, upstream };
      relayed.add(pair);
      tcp.accepted += 1;
      client.pipe(upstream).pipe(client);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        relayed.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(relay.address() as AddressInfo).port}`;
    const fake = new FakeHttp2ApiServer(server, relay, relayed, tcp, url, cert);
    fake.#listen(options.http1Only === true);
    return fake;
  }

  #listen(http1Only: boolean): void {
    if (http1Only) {
      const server = this.#server as https.Server;
      server.on('connection', () => {
        this.#connections += 1;
      });
      server.on('request', (request, response) => {
        this.#arrive({
          headers: request.headers,
          path: request.url ?? '',
          stream: undefined,
          connection: this.#connections,
          answer: (status, body, headers = {}) => {
            response.writeHead(status, headers);
            response.end(body);
          },
        });
      });
      return;
    }
    const server = this.#server as Http2SecureServer;
    server.on('session', (session) => {
      this.#connections += 1;
      this.#sessions.push(session);
      session.on('error', () => {});
    });
    server.on('stream', (stream, headers) => {
      const session = stream.session as ServerHttp2Session;
      stream.on('error', () => {});
      this.#arrive({
        headers,
        path: String(headers[':path']),
        stream,
        connection: this.#sessions.indexOf(session) + 1,
        answer: (status, body, extra = {}) => {
          stream.respond({ ':status': status, ...extra });
          stream.end(body);
        },
      });
    });
  }

  #arrive(stream: ServerStream): void {
    this.streams.push(stream);
    if (this.onStream) this.onStream(stream);
    else stream.answer(404, '{"kind":"Status","code":404}', { 'content-type': 'application/json' });
  }

  /** HTTP/2 sessions made; on an HTTP/1.1-only server, TCP connections accepted. */
  get connections(): number {
    return this.#connections;
  }

  /** TCP connections accepted so far, a failed TLS handshake's included. */
  get tcpConnections(): number {
    return this.#tcp.accepted;
  }

  /** Sends GOAWAY on every session: clients must open a new one for their next request. */
  goAway(): void {
    for (const session of this.#sessions) if (!session.closed) session.goaway();
  }

  /** Breaks every connection open now, as a server restart or a reset does. */
  dropConnections(): void {
    for (const { client, upstream } of this.#relayed) {
      client.resetAndDestroy();
      upstream.destroy();
    }
  }

  /**
   * Stops relaying on the connections open now, in both directions, without closing them: the
   * client's connection looks alive and never answers. Connections made later relay as usual.
   */
  freeze(): void {
    for (const { client, upstream } of this.#relayed) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /**
   * A kubeconfig for this server that trusts its certificate, with a bearer token; with
   * `caFile`, the certificate is read from that file on every request (as a rotated CA would be).
   */
  writeKubeconfig(token = 'h2-token', caFile?: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'pool-controller-kubeconfig-'));
    const path = join(dir, 'config');
    if (caFile) writeFileSync(caFile, this.#cert);
    writeFileSync(
      path,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'fake',
        clusters: [
          {
            name: 'fake',
            cluster: {
              server: this.url,
              ...(caFile
                ? { 'certificate-authority': caFile }
                : { 'certificate-authority-data': this.#cert.toString('base64') }),
            },
          },
        ],
        users: [{ name: 'fake', user: { token } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
      }),
    );
    return path;
  }

  async close(): Promise<void> {
    for (const session of this.#sessions) session.destroy();
    for (const { client, upstream } of this.#relayed) {
      client.destroy();
      upstream.destroy();
    }
    const server = this.#server as { closeAllConnections?: () => void };
    server.closeAllConnections?.();
    await Promise.all([
      new Promise<void>((resolve) => this.#server.close(() => resolve())),
      new Promise<void>((resolve) => this.#relay.close(() => resolve())),
    ]);
  }
}
