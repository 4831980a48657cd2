/**
 * kubectl's convention for where to look, against a real kube-apiserver: started with a
 * kubeconfig whose context names a namespace and without `--namespace`, the built service
 * watches that namespace (and keeps its Lease there), says so in its start-up log, and never
 * writes the kubeconfig's token anywhere.
 *
 * The user is bound to the shipped Roles in that namespace only, so watching any other namespace
 * (or all of them) would be refused by RBAC: a cell served proves the namespace was the context's.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import {
  bindShippedRoles,
  type Cell,
  LEADER_ELECTION_ROLE,
  lwsPod,
  ROLE,
  type ServiceProcess,
  spawnService,
  waitFor,
} from './support-service.js';

interface KubeconfigFile {
  'current-context': string;
  contexts: Array<{ name: string; context: Record<string, string> }>;
}

describe('the namespace from the kubeconfig context', () => {
  let env: KubeEnvironment;
  let namespace: string;
  let service: ServiceProcess;
  let base = '';
  let dir = '';
  let contextName = '';

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    const core = env.kubeConfig.makeApiClient(CoreV1Api);
    const kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('pool-context-ns');
    await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE]);
    await core.createNamespacedPod({ namespace, body: lwsPod('engine', 0, 0, 1) });
    await kubelet.markRunning(namespace, 'engine-0');

    // The unprivileged user's kubeconfig, with the namespace set on its context (what
    // `kubectl config set-context --current --namespace=…` writes).
    const config = JSON.parse(
      readFileSync(env.unprivileged.kubeconfigPath, 'utf8'),
    ) as KubeconfigFile;
    contextName = config['current-context'];
    for (const context of config.contexts) context.context.namespace = namespace;
    dir = mkdtempSync(join(tmpdir(), 'pool-context-ns-'));
    const path = join(dir, 'kubeconfig.json');
    writeFileSync(path, JSON.stringify(config), { mode: 0o600 });

    service = spawnService(['--source', 'kubernetes', '--kubeconfig', path]);
    base = await service.listening();
  });

  afterAll(async () => {
    if (service && service.child.exitCode === null) service.child.kill('SIGKILL');
    await env?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('watches the context namespace and serves its cells', async () => {
    const cells = await waitFor('the cell of the context namespace', async () => {
      const body = (await (await fetch(`${base}/api/v1/cells`)).json()) as {
        cells: Array<Cell & { namespace: string }>;
      };
      return body.cells.length > 0 ? body.cells : undefined;
    });
    expect(cells.map((c) => [c.namespace, c.id, c.alive])).toEqual([
      [namespace, 'engine-00000', true],
    ]);
  });

  it('says at start which namespace it watches and why', () => {
    const line = service
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"watching namespace'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({
      namespace,
      from: 'kubeconfig-context',
      msg: `watching namespace ${namespace}: the namespace of kubeconfig context "${contextName}"`,
    });
  });

  it('keeps its Lease in that namespace too', async () => {
    const coordination = env.kubeConfig.makeApiClient(CoordinationV1Api);
    const lease = await waitFor('the Lease', async () => {
      try {
        return await coordination.readNamespacedLease({ name: 'pool-controller', namespace });
      } catch {
        return undefined;
      }
    });
    expect(lease.spec?.holderIdentity).toBeTruthy();
  });

  it("never writes the kubeconfig's token", () => {
    expect(service.output()).not.toContain(env.unprivileged.token);
  });
});
