/**
 * deploy/ against a real apiserver: every manifest the kustomization lists goes through
 * server-side apply in dry-run mode with strict field validation — what
 * `kubectl apply --server-side --dry-run=server --validate=strict` sends — so the apiserver checks
 * its schema, unknown fields included, without persisting anything.
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type KubeEnvironment, startKubeEnvironment } from './environment/index.js';

const DEPLOY = new URL('../../deploy/', import.meta.url);

/** Where each kind lives in the API (the manifests use these kinds only). */
const RESOURCE_PATHS: Record<string, string> = {
  ServiceAccount: '/api/v1/namespaces/{ns}/serviceaccounts',
  Service: '/api/v1/namespaces/{ns}/services',
  Role: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles',
  RoleBinding: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings',
  Deployment: '/apis/apps/v1/namespaces/{ns}/deployments',
};

interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string };
}

interface Answer {
  status: number;
  body: string;
}

describe('deploy/ manifests', () => {
  let env: KubeEnvironment;
  let ca: Buffer;
  let namespace: string;
  let resources: string[];

  /** One HTTPS call to the apiserver as the admin user. */
  const call = (method: string, path: string, body?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        new URL(path, env.server),
        {
          method,
          ca,
          headers: {
            authorization: `Bearer ${env.token}`,
            accept: 'application/json',
            ...(body ? { 'content-type': 'application/apply-patch+yaml' } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  /** Server-side apply, dry run, strict: the apiserver's verdict on one manifest. */
  const dryRunApply = (manifest: Manifest): Promise<Answer> => {
    const base = RESOURCE_PATHS[manifest.kind];
    if (!base) throw new Error(`no API path known for kind ${manifest.kind}`);
    const path = `${base.replace('{ns}', namespace)}/${manifest.metadata.name}`;
    const query = 'dryRun=All&fieldManager=pool-controller-e2e&fieldValidation=Strict&force=true';
    const body = JSON.stringify({ ...manifest, metadata: { ...manifest.metadata, namespace } });
    return call('PATCH', `${path}?${query}`, body);
  };

  const load = async (file: string): Promise<Manifest> =>
    parse(await readFile(new URL(file, DEPLOY), 'utf8')) as Manifest;

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    ca = await readFile(env.caPath);
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
      'Role',
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
    const after = await call('GET', `/apis/apps/v1/namespaces/${namespace}/deployments`);
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
});
