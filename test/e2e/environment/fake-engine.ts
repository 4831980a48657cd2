/**
 * A fake SGLang engine on loopback (127.0.0.1 by default; the real-cluster lane binds one to each
 * pod's IP in 127.0.0.0/8 and the port its template declares): answers what real routers call on
 * a worker, so a router registers it, health-checks it and routes traffic to it.
 *
 * Measured (paths each router called on a worker it was asked to add, and then periodically):
 * - smg 1.13.0: GET /health, /v1/models, /server_info, /model_info, then /loads?model=…,
 *   /v1/loads?include=…, /metrics (load reporting; a 404 there does not keep the worker out), and
 *   /health every --health-check-interval-secs.
 * - sglang-router 0.3.2: GET /health, /server_info, /model_info, then /health periodically.
 * Traffic: POST /generate and /v1/chat/completions are forwarded as is.
 * Unknown paths are answered 404 and remembered (`unknown`), so a new router version's needs show.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const fakeModel = 'fake-model';

/** Where a fake engine listens; default 127.0.0.1 and a free port. */
export interface FakeEngineOptions {
  /** A loopback address (127.0.0.0/8): nothing here ever listens beyond this machine. */
  readonly host?: string;
  readonly port?: number;
}

export interface FakeEngine {
  /** `http://<host>:<port>`: the URL a router lists. */
  readonly url: string;
  /** `<host>:<port>`: the cell address in a RoutingState. */
  readonly address: string;
  readonly port: number;
  /** Requests per `METHOD /path` (query stripped). */
  readonly counts: Map<string, number>;
  /** `METHOD /path?query` of every request this fake has no answer for. */
  readonly unknown: string[];
  /** POST /generate plus POST /v1/chat/completions served. */
  traffic(): number;
  /** false: /health answers 503 (the engine is restarting). */
  healthy: boolean;
  stop(): Promise<void>;
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

async function readBody(req: IncomingMessage): Promise<string> {
  let raw = '';
  for await (const chunk of req) raw += chunk;
  return raw;
}

export async function startFakeEngine(options: FakeEngineOptions = {}): Promise<FakeEngine> {
  const host = options.host ?? '127.0.0.1';
  if (!host.startsWith('127.')) throw new Error(`fake engine: ${host} is not a loopback address`);
  const counts = new Map<string, number>();
  const unknown: string[] = [];
  const state = { healthy: true };
  let port = 0;
  const serverInfo = (): Record<string, unknown> => ({
    model_path: fakeModel,
    tokenizer_path: fakeModel,
    served_model_name: fakeModel,
    is_generation: true,
    dp_size: 1,
    tp_size: 1,
    version: '0.5.0-fake',
  });
  const modelInfo = (): Record<string, unknown> => ({
    model_path: fakeModel,
    tokenizer_path: fakeModel,
    served_model_name: fakeModel,
    is_generation: true,
    model_type: 'llama',
    architectures: ['LlamaForCausalLM'],
  });

  const server: Server = createServer((req, res) => {
    void (async () => {
      await readBody(req);
      const method = req.method ?? 'GET';
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const key = `${method} ${path}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      switch (key) {
        case 'GET /health':
        case 'GET /health_generate':
          return state.healthy ? json(res, 200, {}) : json(res, 503, { error: 'restarting' });
        case 'GET /v1/models':
          return json(res, 200, {
            object: 'list',
            data: [
              {
                id: fakeModel,
                object: 'model',
                created: 0,
                owned_by: 'sglang',
                root: fakeModel,
                max_model_len: 4096,
              },
            ],
          });
        case 'GET /server_info':
        case 'GET /get_server_info':
          return json(res, 200, serverInfo());
        case 'GET /model_info':
        case 'GET /get_model_info':
          return json(res, 200, modelInfo());
        case 'GET /metrics':
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
          return res.end('');
        case 'POST /generate':
          return json(res, 200, {
            text: `from ${port}`,
            meta_info: {
              id: 'fake',
              finish_reason: { type: 'stop' },
              prompt_tokens: 1,
              completion_tokens: 1,
            },
          });
        case 'POST /v1/chat/completions':
          return json(res, 200, {
            id: 'fake',
            object: 'chat.completion',
            created: 0,
            model: fakeModel,
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: `from ${port}` },
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          });
        default:
          unknown.push(`${method} ${req.url ?? '/'}`);
          return json(res, 404, { error: `fake engine: no ${key}` });
      }
    })().catch(() => {
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    address: `${host}:${port}`,
    port,
    counts,
    unknown,
    traffic: () =>
      (counts.get('POST /generate') ?? 0) + (counts.get('POST /v1/chat/completions') ?? 0),
    get healthy() {
      return state.healthy;
    },
    set healthy(value: boolean) {
      state.healthy = value;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
