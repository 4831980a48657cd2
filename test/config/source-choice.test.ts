import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/cli/config.js';
import {
  chooseSource,
  type HostFacts,
  resolveLeaseNamespace,
  resolveNamespace,
  SERVICE_ACCOUNT_DIR,
} from '../../src/cli/source-choice.js';
import type { KubeconfigContext } from '../../src/kubernetes/client/connection.js';

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
  const none = parseConfig([], {});
  const context = (namespace?: string, inCluster = false): KubeconfigContext => ({
    name: inCluster ? 'inClusterContext' : 'dev',
    namespace,
    inCluster,
  });

  it("is the kubeconfig context's namespace when it names one, as kubectl's", async () => {
    expect(await resolveNamespace(none, facts([]), context('team-a'), read)).toEqual({
      namespace: 'team-a',
      origin: 'kubeconfig-context',
      reason: 'the namespace of kubeconfig context "dev"',
    });
    // Even in a cluster: a kubeconfig in use is what kubectl would read.
    expect(
      (await resolveNamespace(none, facts([TOKEN], IN_CLUSTER), context('team-a'), read)).namespace,
    ).toBe('team-a');
  });

  it("is the service account's namespace in a cluster without a kubeconfig", async () => {
    const inCluster = facts([TOKEN], IN_CLUSTER);
    expect(await resolveNamespace(none, inCluster, context('serving', true), read)).toEqual({
      namespace: 'serving',
      origin: 'service-account',
      reason: "the service account's namespace (in a cluster)",
    });
    // client-node found no namespace file, but it is there to read (or the context is unknown).
    expect((await resolveNamespace(none, inCluster, context(undefined, true), read)).origin).toBe(
      'service-account',
    );
    expect((await resolveNamespace(none, inCluster, undefined, read)).namespace).toBe('serving');
  });

  it("is 'default' when nothing names one: all namespaces only when asked", async () => {
    expect(await resolveNamespace(none, facts([]), context(undefined), read)).toEqual({
      namespace: 'default',
      origin: 'default',
      reason: 'kubeconfig context "dev" names no namespace: kubectl\'s default',
    });
    // A kubeconfig context without a namespace wins over the service account, as for kubectl.
    expect(
      (await resolveNamespace(none, facts([TOKEN], IN_CLUSTER), context(undefined), read))
        .namespace,
    ).toBe('default');
    expect((await resolveNamespace(none, facts([]), undefined, read)).origin).toBe('default');
  });

  it("is what --namespace says, and '*' means all", async () => {
    const inCluster = facts([TOKEN], IN_CLUSTER);
    const flagged = await resolveNamespace(
      parseConfig(['--namespace', 'x'], {}),
      inCluster,
      context('team-a'),
      read,
    );
    expect(flagged).toEqual({ namespace: 'x', origin: 'flag', reason: '--namespace' });
    const all = await resolveNamespace(
      parseConfig(['--namespace', '*'], {}),
      inCluster,
      context('team-a'),
      read,
    );
    expect(all).toEqual({
      namespace: undefined,
      origin: 'flag',
      reason: "--namespace '*': all namespaces",
    });
  });

  it('quotes a long context name only in part', async () => {
    const long: KubeconfigContext = {
      name: 'x'.repeat(500),
      namespace: 'team-a',
      inCluster: false,
    };
    const choice = await resolveNamespace(none, facts([]), long, read);
    expect(choice.reason).toBe(`the namespace of kubeconfig context "${'x'.repeat(64)}…"`);
  });

  it('refuses a context namespace that is not a namespace name, without quoting it', async () => {
    const error = await resolveNamespace(none, facts([]), context('Not/A Namespace'), read).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error!.message).toBe(
      'kubeconfig context "dev" names a namespace that is not a namespace name (lowercase letters, digits, \'-\'); fix it or pass --namespace',
    );
  });
});

describe('the namespace of the Lease', () => {
  const read = async () => 'serving\n';
  const none = parseConfig([], {});
  const dev: KubeconfigContext = { name: 'dev', namespace: 'team-a', inCluster: false };

  it('follows the watched namespace, else the kubeconfig context, else default', async () => {
    expect(await resolveLeaseNamespace(none, facts([]), 'watched', dev, read)).toBe('watched');
    expect(await resolveLeaseNamespace(none, facts([]), undefined, dev, read)).toBe('team-a');
    expect(await resolveLeaseNamespace(none, facts([]), undefined, undefined, read)).toBe(
      'default',
    );
  });

  it("is the pod's own namespace in a cluster, and the flag's when given", async () => {
    expect(
      await resolveLeaseNamespace(none, facts([], { POD_NAMESPACE: 'mine' }), 'w', dev, read),
    ).toBe('mine');
    expect(await resolveLeaseNamespace(none, facts([TOKEN], IN_CLUSTER), 'w', dev, read)).toBe(
      'serving',
    );
    const flagged = parseConfig(['--leader-elect-resource-namespace', 'leases'], {});
    expect(await resolveLeaseNamespace(flagged, facts([]), 'w', dev, read)).toBe('leases');
  });
});
