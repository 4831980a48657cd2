/**
 * deploy/ against a real apiserver: every manifest the kustomization lists goes through
 * server-side apply in dry-run mode with strict field validation (support-dry-run.ts), so the
 * apiserver checks its schema, unknown fields included, without persisting anything.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { type ApiClient, apiClient, type Manifest } from './support-dry-run.js';

const DEPLOY = new URL('../../deploy/', import.meta.url);

describe('deploy/ manifests', () => {
  let env: KubeEnvironment;
  let api: ApiClient;
  let namespace: string;
  let resources: string[];

  const dryRunApply = (manifest: Manifest) => api.dryRunApply(manifest, namespace);

  const load = async (file: string): Promise<Manifest> =>
    parse(await readFile(new URL(file, DEPLOY), 'utf8')) as Manifest;

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    api = await apiClient(env);
    namespace = await env.createNamespace('pool-deploy');
    resources = (
      parse(await readFile(new URL('kustomization.yaml', DEPLOY), 'utf8')) as {
        resources: string[];
      }
    ).resources;
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('lists a manifest for every kind the service needs', async () => {
    const kinds = await Promise.all(resources.map(async (file) => (await load(file)).kind));
    expect(kinds.sort()).toEqual([
      'Deployment',
      'PodDisruptionBudget',
      'Role',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
  });

  it('passes server-side apply in dry-run mode with strict field validation', async () => {
    for (const file of resources) {
      const answer = await dryRunApply(await load(file));
      // 201: applying an object that does not exist yet creates it (here: would create it).
      expect(answer.status, `${file}: ${answer.body}`).toBe(201);
    }
    // A dry run persists nothing.
    const after = await api.call('GET', `/apis/apps/v1/namespaces/${namespace}/deployments`);
    expect(JSON.parse(after.body).items).toEqual([]);
  });

  it('would catch a field outside the schema (the check is not vacuous)', async () => {
    const deployment = (await load('deployment.yaml')) as Manifest & {
      spec: { template: { spec: Record<string, unknown> } };
    };
    deployment.spec.template.spec.serviceAcountName = 'typo';
    const answer = await dryRunApply(deployment);
    // The apiserver answers an undeclared field in an apply patch with a failure Status (code 500).
    expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
    expect(answer.body).toContain(
      '.spec.template.spec.serviceAcountName: field not declared in schema',
    );
  });

  it('the endpointslices component passes the same dry run, Deployment patch merged in', async () => {
    for (const file of ['endpointslices/role.yaml', 'endpointslices/rolebinding.yaml']) {
      const answer = await dryRunApply(await load(file));
      expect(answer.status, `${file}: ${answer.body}`).toBe(201);
    }
    // The strategic-merge patch merged as kustomize does: the env entry joins the container's.
    const deployment = (await load('deployment.yaml')) as Manifest & {
      spec: { template: { spec: { containers: Array<{ name: string; env: unknown[] }> } } };
    };
    const patch = (await load('endpointslices/deployment-patch.yaml')) as typeof deployment;
    const [patched] = patch.spec.template.spec.containers;
    const container = deployment.spec.template.spec.containers.find(
      (c) => c.name === patched?.name,
    );
    container?.env.push(...(patched?.env ?? []));
    const answer = await dryRunApply(deployment);
    expect(answer.status, answer.body).toBe(201);
    expect(answer.body).toContain('POOL_CONTROLLER_PUBLISH_ENDPOINTSLICES');
  });
});
