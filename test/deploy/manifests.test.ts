import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_LEADER_ELECT_RESOURCE_NAME } from '../../src/cli/config.js';

const DEPLOY = new URL('../../deploy/', import.meta.url);

// biome-ignore lint/suspicious/noExplicitAny: manifests are untyped YAML documents
type Manifest = any;

async function manifest(file: string): Promise<Manifest> {
  return parse(await readFile(new URL(file, DEPLOY), 'utf8'));
}

describe('deploy/', () => {
  it('lists every manifest in its kustomization', async () => {
    const kustomization = await manifest('kustomization.yaml');
    expect(kustomization.resources).toEqual([
      'serviceaccount.yaml',
      'role.yaml',
      'rolebinding.yaml',
      'leader-election-role.yaml',
      'leader-election-rolebinding.yaml',
      'deployment.yaml',
      'poddisruptionbudget.yaml',
      'service.yaml',
    ]);
  });

  it('grants get, list and watch on pods and LeaderWorkerSets, and create and patch on Events only', async () => {
    const role = await manifest('role.yaml');
    expect(role.kind).toBe('Role');
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      {
        apiGroups: ['leaderworkerset.x-k8s.io'],
        resources: ['leaderworkersets'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
  });

  it('binds that role to the service account the deployment runs as', async () => {
    const [binding, account, deployment] = await Promise.all([
      manifest('rolebinding.yaml'),
      manifest('serviceaccount.yaml'),
      manifest('deployment.yaml'),
    ]);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'pool-controller',
    });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name }]);
    expect(deployment.spec.template.spec.serviceAccountName).toBe(account.metadata.name);
  });

  it('probes /healthz for liveness and /readyz for readiness, on the probe listener of their own', async () => {
    const deployment = await manifest('deployment.yaml');
    const [container] = deployment.spec.template.spec.containers;
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'probes' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'probes' });
    expect(container.ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'probes', containerPort: 8081, protocol: 'TCP' },
    ]);
    const env = (name: string) => container.env.find((e: Manifest) => e.name === name).value;
    expect(env('POOL_CONTROLLER_LISTEN')).toBe('0.0.0.0:8080');
    expect(env('POOL_CONTROLLER_HEALTH_PROBE_LISTEN')).toBe('0.0.0.0:8081');
  });

  it('runs non-root, read-only, without privilege escalation, with resources set', async () => {
    const deployment = await manifest('deployment.yaml');
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container.resources.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container.resources.limits.memory).toEqual(expect.any(String));
  });

  it('watches its own namespace, which is all a Role allows', async () => {
    const deployment = await manifest('deployment.yaml');
    const env = deployment.spec.template.spec.containers[0].env;
    expect(env.find((e: Manifest) => e.name === 'POOL_CONTROLLER_NAMESPACE').valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.namespace' },
    });
    expect(env.find((e: Manifest) => e.name === 'POOL_CONTROLLER_SOURCE').value).toBe('kubernetes');
  });

  it('exposes the control plane and metrics port through a Service selecting the pods', async () => {
    const [service, deployment] = await Promise.all([
      manifest('service.yaml'),
      manifest('deployment.yaml'),
    ]);
    expect(service.spec.ports).toEqual([
      { name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' },
    ]);
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    expect(deployment.spec.selector.matchLabels).toEqual(service.spec.selector);
  });

  it('grants leader election create on leases, get and update on its Lease only, bound to the same account', async () => {
    const [role, binding, account] = await Promise.all([
      manifest('leader-election-role.yaml'),
      manifest('leader-election-rolebinding.yaml'),
      manifest('serviceaccount.yaml'),
    ]);
    expect(role.kind).toBe('Role');
    expect(role.rules).toEqual([
      // A create names no object yet: it cannot be narrowed by resourceNames.
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        // The service's default --leader-elect-resource-name.
        resourceNames: [DEFAULT_LEADER_ELECT_RESOURCE_NAME],
        verbs: ['get', 'update'],
      },
    ]);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name }]);
  });

  it('runs two replicas with leader election, spread over nodes, one kept through disruptions', async () => {
    const [deployment, pdb] = await Promise.all([
      manifest('deployment.yaml'),
      manifest('poddisruptionbudget.yaml'),
    ]);
    const pod = deployment.spec.template.spec;
    const env = pod.containers[0].env;
    const named = (name: string) => env.find((e: Manifest) => e.name === name);
    expect(deployment.spec.replicas).toBe(2);
    expect(named('POOL_CONTROLLER_LEADER_ELECT').value).toBe('true');
    expect(named('POD_NAME').valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(named('POD_NAMESPACE').valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.namespace' },
    });
    // The Lease lives where the leases Role grants: the pod's own namespace.
    expect(named('POOL_CONTROLLER_LEADER_ELECT_RESOURCE_NAMESPACE').valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.namespace' },
    });
    expect(pod.topologySpreadConstraints).toEqual([
      expect.objectContaining({
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: deployment.spec.selector.matchLabels },
      }),
    ]);
    expect(pdb.spec).toEqual({
      minAvailable: 1,
      selector: { matchLabels: deployment.spec.selector.matchLabels },
    });
  });

  it('gives the pod more grace than the service needs to shut down', async () => {
    const deployment = await manifest('deployment.yaml');
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(10);
  });
});

describe('deploy/endpointslices (optional component)', () => {
  it('is a kustomize Component adding a Role, its binding and the flag', async () => {
    const component = await manifest('endpointslices/kustomization.yaml');
    expect(component.kind).toBe('Component');
    expect(component.apiVersion).toBe('kustomize.config.k8s.io/v1alpha1');
    expect(component.resources).toEqual(['role.yaml', 'rolebinding.yaml']);
    expect(component.patches).toEqual([
      { path: 'deployment-patch.yaml', target: { kind: 'Deployment', name: 'pool-controller' } },
    ]);
  });

  it('grants endpointslices in discovery.k8s.io to the service account, and nothing else', async () => {
    const [role, binding, account] = await Promise.all([
      manifest('endpointslices/role.yaml'),
      manifest('endpointslices/rolebinding.yaml'),
      manifest('serviceaccount.yaml'),
    ]);
    expect(role.kind).toBe('Role');
    expect(role.rules).toEqual([
      {
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ]);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name }]);
  });

  it('turns --publish-endpointslices on in the controller container', async () => {
    const [patch, deployment] = await Promise.all([
      manifest('endpointslices/deployment-patch.yaml'),
      manifest('deployment.yaml'),
    ]);
    expect(patch.metadata.name).toBe(deployment.metadata.name);
    const [container] = patch.spec.template.spec.containers;
    expect(container.name).toBe(deployment.spec.template.spec.containers[0].name);
    expect(container.env).toEqual([
      { name: 'POOL_CONTROLLER_PUBLISH_ENDPOINTSLICES', value: 'true' },
    ]);
  });
});

describe('deploy/readiness-gate (optional component)', () => {
  it('is a kustomize Component adding a Role, its binding and the flag', async () => {
    const component = await manifest('readiness-gate/kustomization.yaml');
    expect(component.kind).toBe('Component');
    expect(component.apiVersion).toBe('kustomize.config.k8s.io/v1alpha1');
    expect(component.resources).toEqual(['role.yaml', 'rolebinding.yaml']);
    expect(component.patches).toEqual([
      { path: 'deployment-patch.yaml', target: { kind: 'Deployment', name: 'pool-controller' } },
    ]);
  });

  it('grants patch on pods/status to the service account, and nothing else', async () => {
    const [role, binding, account] = await Promise.all([
      manifest('readiness-gate/role.yaml'),
      manifest('readiness-gate/rolebinding.yaml'),
      manifest('serviceaccount.yaml'),
    ]);
    expect(role.kind).toBe('Role');
    expect(role.rules).toEqual([{ apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] }]);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: account.metadata.name }]);
  });

  it('turns --cell-readiness-gate on in the controller container', async () => {
    const [patch, deployment] = await Promise.all([
      manifest('readiness-gate/deployment-patch.yaml'),
      manifest('deployment.yaml'),
    ]);
    expect(patch.metadata.name).toBe(deployment.metadata.name);
    const [container] = patch.spec.template.spec.containers;
    expect(container.name).toBe(deployment.spec.template.spec.containers[0].name);
    expect(container.env).toEqual([{ name: 'POOL_CONTROLLER_CELL_READINESS_GATE', value: 'true' }]);
  });
});
