import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkClusterConfig,
  KubeConfigError,
  loadApiConnection,
} from '../../src/kubernetes/client/connection.js';
import {
  IDLE_CONNECTION_TIMEOUT_MS,
  releaseRequestAgent,
} from '../../src/kubernetes/client/shared-agents.js';
import { tokenKubeconfig } from '../support/token-kubeconfig.js';

const PASSWORD = 'hunter2-very-secret';
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.tok-SECRET-payload';

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'pool-controller-connection-'));
}

function file(content: string): string {
  const path = join(dir(), 'config');
  writeFileSync(path, content);
  return path;
}

function kubeconfig(cluster: string[], context = 'c'): string {
  return tokenKubeconfig(TOKEN, cluster, context);
}

/** A kubeconfig whose line 8 is badly indented, right below a password and a token. */
const SYNTAX_ERROR = [
  'apiVersion: v1',
  'kind: Config',
  'users:',
  '- name: u',
  '  user:',
  `    password: ${PASSWORD}`,
  `    token: ${TOKEN}`,
  '   bad: [indent',
  'clusters: []',
  '',
].join('\n');

async function failure(promise: Promise<unknown>): Promise<KubeConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KubeConfigError);
  return error as KubeConfigError;
}

function expectNoSecrets(error: Error): void {
  const everything = `${error.message}\n${error.stack}\n${JSON.stringify(error)}\n${String(error.cause)}`;
  expect(everything).not.toContain(PASSWORD);
  expect(everything).not.toContain('tok-SECRET');
  expect(error.message).not.toContain('\n');
  expect(error.cause).toBeUndefined();
}

describe('loadApiConnection: errors never quote the kubeconfig', () => {
  it('reduces a YAML syntax error to the file, the line and the kind of error', async () => {
    const path = file(SYNTAX_ERROR);
    const error = await failure(loadApiConnection({ kubeconfigPath: path }));
    expectNoSecrets(error);
    expect(error.message).toBe(
      `cannot read kubeconfig ${path}: YAML syntax error at line 8, column 4: bad indentation of a mapping entry`,
    );
  });

  it('does the same for a kubeconfig found through KUBECONFIG', async () => {
    const path = file(SYNTAX_ERROR);
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = path;
    try {
      const error = await failure(loadApiConnection({}));
      expectNoSecrets(error);
      expect(error.message).toContain('YAML syntax error at line 8');
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });
});

describe('checkClusterConfig', () => {
  it('accepts a usable kubeconfig, contacts no server, and names the context in use', async () => {
    await expect(
      checkClusterConfig({
        kubeconfigPath: file(
          kubeconfig(['server: http://127.0.0.1:1', 'insecure-skip-tls-verify: true']),
        ),
      }),
    ).resolves.toEqual({ name: 'c', namespace: undefined, inCluster: false });
  });

  it("names the namespace of the context in use, --context's when given, as kubectl reads it", async () => {
    const path = file(
      [
        kubeconfig(['server: http://127.0.0.1:1', 'insecure-skip-tls-verify: true']).trimEnd(),
        '    namespace: team-a',
        '- name: other',
        '  context:',
        '    cluster: k',
        '    user: u',
        '    namespace: team-b',
        '',
      ].join('\n'),
    );
    await expect(checkClusterConfig({ kubeconfigPath: path })).resolves.toEqual({
      name: 'c',
      namespace: 'team-a',
      inCluster: false,
    });
    await expect(checkClusterConfig({ kubeconfigPath: path, context: 'other' })).resolves.toEqual({
      name: 'other',
      namespace: 'team-b',
      inCluster: false,
    });
  });

  it('refuses a syntax error, naming the line', async () => {
    const error = await failure(checkClusterConfig({ kubeconfigPath: file(SYNTAX_ERROR) }));
    expectNoSecrets(error);
    expect(error.message).toMatch(/YAML syntax error at line 8, column 4/);
  });

  it('refuses an empty file', async () => {
    const path = file('');
    const error = await failure(checkClusterConfig({ kubeconfigPath: path }));
    expect(error.message).toBe(`cannot read kubeconfig ${path}: the file is empty`);
  });

  it('refuses a file with only comments as not a kubeconfig', async () => {
    const path = file('# nothing here\n');
    const error = await failure(checkClusterConfig({ kubeconfigPath: path }));
    expect(error.message).toBe(
      `cannot read kubeconfig ${path}: YAML syntax error: expected a document, but the input is empty`,
    );
  });

  it('refuses a directory', async () => {
    const path = dir();
    const error = await failure(checkClusterConfig({ kubeconfigPath: path }));
    expect(error.message).toBe(`cannot read kubeconfig ${path}: it is a directory, not a file`);
  });

  it('refuses a file that does not exist', async () => {
    const path = join(dir(), 'missing');
    const error = await failure(checkClusterConfig({ kubeconfigPath: path }));
    expect(error.message).toBe(`cannot read kubeconfig ${path}: no such file (ENOENT)`);
  });

  it('refuses a path below a file (unreadable as a kubeconfig, whoever runs it)', async () => {
    const parent = file('x');
    const error = await failure(checkClusterConfig({ kubeconfigPath: join(parent, 'config') }));
    expect(error.message).toMatch(/a parent of the path is not a directory \(ENOTDIR\)$/);
  });

  it('refuses an unknown --context, listing the ones there are', async () => {
    const path = file(kubeconfig(['server: https://127.0.0.1:1']));
    const error = await failure(checkClusterConfig({ kubeconfigPath: path, context: 'elsewhere' }));
    expect(error.message).toBe('context "elsewhere" is not in the kubeconfig (it has: c)');
  });

  it('refuses a plain-http server without insecure-skip-tls-verify (a permanent error)', async () => {
    const path = file(kubeconfig(['server: http://127.0.0.1:1']));
    const error = await failure(checkClusterConfig({ kubeconfigPath: path }));
    expectNoSecrets(error);
    expect(error.message).toBe(
      'cannot prepare requests to http://127.0.0.1:1: HTTP protocol is not allowed when skipTLSVerify is not set or false',
    );
  });

  it('refuses a current-context that names nothing', async () => {
    const path = file(kubeconfig(['server: https://127.0.0.1:1'], 'gone'));
    const error = await failure(checkClusterConfig({ kubeconfigPath: path }));
    expect(error.message).toMatch(/no usable current context \(current-context: "gone"\)/);
  });
});

describe('loadApiConnection: connections are reused', () => {
  type AgentLike = { keepAlive?: boolean; options?: { timeout?: number } };

  /** A connection to an https server whose CA the kubeconfig names by file, read per request. */
  async function withCaFile(content: string) {
    const ca = join(dir(), 'ca.crt');
    writeFileSync(ca, content);
    const connection = await loadApiConnection({
      kubeconfigPath: file(
        kubeconfig(['server: https://127.0.0.1:1', `certificate-authority: ${ca}`]),
      ),
    });
    return { ca, connection };
  }

  it('hands every request the same keep-alive agent while the TLS material is the same', async () => {
    const { connection } = await withCaFile('ca-one');
    const first = (await connection.requestOptions()).agent as AgentLike;
    const second = (await connection.requestOptions()).agent as AgentLike;
    expect(second).toBe(first);
    expect(first.keepAlive).toBe(true);
    expect(first.options?.timeout).toBe(IDLE_CONNECTION_TIMEOUT_MS);
    // Each request carries its own (rotating) token; only the connection is shared.
    expect((await connection.requestOptions()).headers).toMatchObject({
      Authorization: `Bearer ${TOKEN}`,
    });
  });

  it('makes a new agent when the certificate authority file changes, leaving the old one to its requests', async () => {
    const { ca, connection } = await withCaFile('ca-one');
    const before = (await connection.requestOptions()).agent as AgentLike;
    writeFileSync(ca, 'ca-two');
    const after = (await connection.requestOptions()).agent as AgentLike;
    expect(after).not.toBe(before);
    let destroyed = false;
    (before as { destroy(): void }).destroy = () => {
      destroyed = true;
    };
    releaseRequestAgent(before);
    expect(destroyed).toBe(false);
    expect((await connection.requestOptions()).agent).toBe(after);
  });

  it('leaves a proxy’s agent per request, and destroys it when the request is done', async () => {
    const connection = await loadApiConnection({
      kubeconfigPath: file(
        kubeconfig(['server: https://127.0.0.1:1', 'proxy-url: http://127.0.0.1:3128']),
      ),
    });
    const first = (await connection.requestOptions()).agent as AgentLike & { destroy(): void };
    const second = (await connection.requestOptions()).agent;
    expect(second).not.toBe(first);
    let destroyed = false;
    const destroy = first.destroy.bind(first);
    first.destroy = () => {
      destroyed = true;
      destroy();
    };
    releaseRequestAgent(first);
    expect(destroyed).toBe(true);
  });
});
