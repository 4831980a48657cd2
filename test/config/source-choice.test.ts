import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/cli/config.js';
import {
  chooseSource,
  type HostFacts,
  resolveNamespace,
  SERVICE_ACCOUNT_DIR,
} from '../../src/cli/source-choice.js';

function facts(files: string[], env: NodeJS.ProcessEnv = {}): HostFacts {
  return { env, exists: (p) => files.includes(p), home: '/home/dev' };
}

const TOKEN = `${SERVICE_ACCOUNT_DIR}/token`;
const IN_CLUSTER = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };

describe('choosing the pod source', () => {
  it('uses --source when given', () => {
    const choice = chooseSource(
      parseConfig(['--source', 'simulated'], {}),
      facts([TOKEN], IN_CLUSTER),
    );
    expect(choice).toEqual({ kind: 'simulated', inferred: false, reason: '--source simulated' });
  });

  it('picks kubernetes in a cluster: service host variable and mounted token', () => {
    expect(chooseSource(parseConfig([], {}), facts([TOKEN], IN_CLUSTER))).toMatchObject({
      kind: 'kubernetes',
      inferred: true,
    });
    expect(chooseSource(parseConfig([], {}), facts([], IN_CLUSTER)).kind).toBe('simulated');
    expect(chooseSource(parseConfig([], {}), facts([TOKEN])).kind).toBe('simulated');
  });

  it('picks kubernetes with a kubeconfig from --kubeconfig, KUBECONFIG or ~/.kube/config', () => {
    expect(chooseSource(parseConfig(['--kubeconfig', '/k'], {}), facts(['/k'])).kind).toBe(
      'kubernetes',
    );
    const fromEnv = chooseSource(parseConfig([], {}), facts(['/b'], { KUBECONFIG: '/a:/b' }));
    expect(fromEnv).toMatchObject({
      kind: 'kubernetes',
      reason: 'kubeconfig /b (from KUBECONFIG)',
    });
    expect(chooseSource(parseConfig([], {}), facts(['/home/dev/.kube/config'])).kind).toBe(
      'kubernetes',
    );
  });

  it('falls back to simulated, loudly, when there is no cluster', () => {
    const choice = chooseSource(parseConfig([], {}), facts([], {}));
    expect(choice.kind).toBe('simulated');
    expect(choice.inferred).toBe(true);
    expect(choice.reason).toContain('SIMULATED');
  });

  it('refuses a KUBECONFIG that names no existing file instead of simulating', () => {
    expect(() =>
      chooseSource(parseConfig([], {}), facts([], { KUBECONFIG: '/nonexistent' })),
    ).toThrow('KUBECONFIG names no existing file (/nonexistent)');
    expect(() => chooseSource(parseConfig([], {}), facts([], { KUBECONFIG: '' }))).not.toThrow();
  });

  it('fails naming --kubeconfig when that file does not exist', () => {
    expect(() => chooseSource(parseConfig(['--kubeconfig', '/missing'], {}), facts([]))).toThrow(
      ConfigError,
    );
    expect(() => chooseSource(parseConfig(['--kubeconfig', '/missing'], {}), facts([]))).toThrow(
      'invalid --kubeconfig (POOL_CONTROLLER_KUBECONFIG): /missing does not exist',
    );
  });
});

describe('the namespace to watch', () => {
  const read = async () => 'serving\n';

  it("is the pod's own namespace in a cluster, all namespaces outside one", async () => {
    expect(await resolveNamespace(parseConfig([], {}), facts([TOKEN], IN_CLUSTER), read)).toBe(
      'serving',
    );
    expect(await resolveNamespace(parseConfig([], {}), facts([]), read)).toBeUndefined();
  });

  it("is what --namespace says, and '*' means all", async () => {
    const inCluster = facts([TOKEN], IN_CLUSTER);
    expect(await resolveNamespace(parseConfig(['--namespace', 'x'], {}), inCluster, read)).toBe(
      'x',
    );
    expect(
      await resolveNamespace(parseConfig(['--namespace', '*'], {}), inCluster, read),
    ).toBeUndefined();
  });
});
