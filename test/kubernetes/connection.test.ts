import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeConfigError, loadApiConnection } from '../../src/kubernetes/connection.js';

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
