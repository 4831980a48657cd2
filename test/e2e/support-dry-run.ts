/**
 * Server-side apply in dry-run mode with strict field validation — what
 * `kubectl apply --server-side --dry-run=server --validate=strict` sends — so the apiserver checks
 * a manifest against its schema, unknown fields included, without persisting anything. Shared by
 * the deploy/ and chart e2e tests.
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { KubeEnvironment } from './environment/index.js';

/** Where each kind the manifests use lives in the API; `{ns}` marks a namespaced kind. */
export const RESOURCE_PATHS: Record<string, string> = {
  ServiceAccount: '/api/v1/namespaces/{ns}/serviceaccounts',
  Service: '/api/v1/namespaces/{ns}/services',
  Secret: '/api/v1/namespaces/{ns}/secrets',
  ConfigMap: '/api/v1/namespaces/{ns}/configmaps',
  Role: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles',
  RoleBinding: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings',
  ClusterRole: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  ClusterRoleBinding: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  Deployment: '/apis/apps/v1/namespaces/{ns}/deployments',
  PodDisruptionBudget: '/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets',
  NetworkPolicy: '/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies',
  PrometheusRule: '/apis/monitoring.coreos.com/v1/namespaces/{ns}/prometheusrules',
  ServiceMonitor: '/apis/monitoring.coreos.com/v1/namespaces/{ns}/servicemonitors',
  CustomResourceDefinition: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
};

export interface Manifest {
  apiVersion?: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface Answer {
  status: number;
  body: string;
}

export interface ApiClient {
  /** One HTTPS call to the apiserver as the admin user; a body is sent as an apply patch. */
  call(method: string, path: string, body?: string): Promise<Answer>;
  /**
   * Server-side apply, dry run, strict: the apiserver's verdict on one manifest. A namespaced
   * manifest goes to its own `metadata.namespace`, else to `namespace`.
   */
  dryRunApply(manifest: Manifest, namespace: string): Promise<Answer>;
  /** Server-side apply for real (e.g. a CRD other manifests need). */
  apply(manifest: Manifest, namespace?: string): Promise<Answer>;
}

export async function apiClient(env: KubeEnvironment): Promise<ApiClient> {
  const ca = await readFile(env.caPath);
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

  const send = (manifest: Manifest, namespace: string | undefined, dryRun: boolean) => {
    const base = RESOURCE_PATHS[manifest.kind];
    if (!base) throw new Error(`no API path known for kind ${manifest.kind}`);
    const namespaced = base.includes('{ns}');
    const ns = manifest.metadata.namespace ?? namespace;
    if (namespaced && !ns)
      throw new Error(`${manifest.kind} ${manifest.metadata.name}: no namespace`);
    const path = `${base.replace('{ns}', ns ?? '')}/${manifest.metadata.name}`;
    const query = `${dryRun ? 'dryRun=All&' : ''}fieldManager=pool-controller-e2e&fieldValidation=Strict&force=true`;
    const metadata = namespaced ? { ...manifest.metadata, namespace: ns } : manifest.metadata;
    return call('PATCH', `${path}?${query}`, JSON.stringify({ ...manifest, metadata }));
  };

  return {
    call,
    dryRunApply: (manifest, namespace) => send(manifest, namespace, true),
    apply: (manifest, namespace) => send(manifest, namespace, false),
  };
}
