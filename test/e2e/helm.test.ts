/**
 * charts/pool-controller with the real helm (built by tools.sh) and a real apiserver:
 * `helm lint --strict`; `helm template` with the default values and each ci/ values file,
 * every rendered object through server-side apply in dry-run mode with strict field validation
 * (support-dry-run.ts). The monitoring objects (PrometheusRule, ServiceMonitor) are dry-run
 * against minimal CRDs registered first (fixtures/monitoring-crds.yaml), whose schemas have no
 * preserve-unknown-fields, so a misspelt field still fails; deploy/monitoring/'s own two are too. The default render is also compared
 * with deploy/: the same objects and the same RBAC, and the README's install block's Helm
 * arguments render the image reference the block built.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { runReadmeInstall } from '../support/readme-install.js';
import { type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { BUILD_TIMEOUT_MS, ensureTool } from './environment/tools.js';
import { type ApiClient, apiClient, type Manifest } from './support-dry-run.js';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url);
const CHART = fileURLToPath(new URL('charts/pool-controller/', ROOT));
const VALUES = {
  default: [],
  'all-namespaces': ['-f', `${CHART}ci/all-namespaces-values.yaml`],
  monitoring: ['-f', `${CHART}ci/monitoring-values.yaml`],
  'all-features': ['-f', `${CHART}ci/all-features-values.yaml`],
} as const;
type ValuesName = keyof typeof VALUES;

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are untyped YAML documents
type Any = any;

const byKind = (objects: Manifest[], kind: string): Any[] => objects.filter((o) => o.kind === kind);
const envOf = (deployment: Any): Map<string, Any> =>
  new Map(
    deployment.spec.template.spec.containers[0].env.map((e: Any) => [
      e.name,
      e.value ?? e.valueFrom,
    ]),
  );

describe('charts/pool-controller', () => {
  let helm: string;
  let env: KubeEnvironment;
  let api: ApiClient;
  let namespace: string;
  let watched: string;
  const renders = new Map<ValuesName, Manifest[]>();

  const template = async (values: readonly string[], extra: string[] = []): Promise<Manifest[]> => {
    const { stdout } = await run(helm, [
      'template',
      'pool-controller',
      CHART,
      '--namespace',
      namespace,
      ...values,
      ...extra,
    ]);
    return parseAllDocuments(stdout)
      .map((doc) => doc.toJS() as Manifest | null)
      .filter((o): o is Manifest => o !== null);
  };

  // One hook: building the tool on a fresh machine takes minutes, hence its own timeout.
  beforeAll(async () => {
    helm = await ensureTool('helm');
    env = await startKubeEnvironment({ watchCache: true });
    api = await apiClient(env);
    namespace = await env.createNamespace('pool-chart');
    watched = await env.createNamespace('inference');
    // The CRDs go in for real (a dry run of a custom resource needs its type served).
    const crds = parseAllDocuments(
      await readFile(new URL('fixtures/monitoring-crds.yaml', import.meta.url), 'utf8'),
    ).map((doc) => doc.toJS() as Manifest);
    for (const crd of crds) {
      const answer = await api.apply(crd);
      expect(answer.status, answer.body).toBeLessThan(300);
    }
    await waitForServed(['prometheusrules', 'servicemonitors']);
    for (const name of Object.keys(VALUES) as ValuesName[]) {
      // The monitoring values watch a named namespace: point it at one that exists.
      const extra = name === 'monitoring' ? ['--set', `watch.namespace=${watched}`] : [];
      renders.set(name, await template(VALUES[name], extra));
    }
  }, BUILD_TIMEOUT_MS);
  afterAll(async () => {
    await env?.stop();
  });

  /** Until the apiserver serves monitoring.coreos.com/v1 with these resources. */
  const waitForServed = async (resources: string[]): Promise<void> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const answer = await api.call('GET', '/apis/monitoring.coreos.com/v1');
      const served =
        answer.status === 200
          ? (JSON.parse(answer.body).resources as { name: string }[]).map((r) => r.name)
          : [];
      if (resources.every((r) => served.includes(r))) return;
      if (Date.now() > deadline)
        throw new Error(`CRDs not served: ${answer.status} ${answer.body}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  it('passes helm lint --strict with the default values and each ci/ values file', async () => {
    for (const [name, values] of Object.entries(VALUES)) {
      const { stdout } = await run(helm, ['lint', '--strict', CHART, ...values]).catch(
        (err: { stdout?: string; stderr?: string }) => {
          throw new Error(`helm lint (${name}): ${err.stdout}${err.stderr}`);
        },
      );
      expect(stdout, name).toContain('0 chart(s) failed');
    }
  });

  for (const name of Object.keys(VALUES) as ValuesName[]) {
    it(`renders (${name} values) objects the apiserver accepts: server-side dry run, strict`, async () => {
      const objects = renders.get(name)!;
      expect(objects.length).toBeGreaterThan(0);
      for (const object of objects) {
        const answer = await api.dryRunApply(object, namespace);
        // 201: would create it.
        expect(answer.status, `${object.kind} ${object.metadata.name}: ${answer.body}`).toBe(201);
      }
    });
  }

  it('renders by default what deploy/ holds: the same objects and the same RBAC', async () => {
    const deploy = new URL('deploy/', ROOT);
    const files = (
      parse(await readFile(new URL('kustomization.yaml', deploy), 'utf8')) as {
        resources: string[];
      }
    ).resources;
    const manifests = await Promise.all(
      files.map(async (f) => parse(await readFile(new URL(f, deploy), 'utf8')) as Manifest),
    );
    const rendered = renders.get('default')!;
    const kinds = (objects: Manifest[]) => objects.map((o) => o.kind).sort();
    expect(kinds(rendered)).toEqual(kinds(manifests));
    const rules = (objects: Manifest[]) =>
      byKind(objects, 'Role')
        .map((role) => JSON.stringify(role.rules))
        .sort();
    expect(rules(rendered)).toEqual(rules(manifests));
    // Each binding ties a role of the same rules to the one service account.
    for (const binding of byKind(rendered, 'RoleBinding')) {
      const role = byKind(rendered, 'Role').find((r) => r.metadata.name === binding.roleRef.name);
      expect(role, binding.metadata.name).toBeDefined();
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'pool-controller', namespace },
      ]);
    }
    const [ours] = byKind(rendered, 'Deployment');
    const [theirs] = byKind(manifests, 'Deployment');
    expect(ours.spec.replicas).toBe(theirs.spec.replicas);
    expect([...envOf(ours)]).toEqual([...envOf(theirs)]);
    const pod = (d: Any) => {
      const { containers, topologySpreadConstraints, ...rest } = d.spec.template.spec;
      const { image, ...container } = containers[0];
      return {
        ...rest,
        container,
        spread: topologySpreadConstraints.map(({ labelSelector, ...c }: Any) => c),
      };
    };
    expect(pod(ours)).toEqual(pod(theirs));
    expect(byKind(rendered, 'PodDisruptionBudget')[0].spec.minAvailable).toBe(1);
    expect(byKind(rendered, 'Service')[0].spec.ports).toEqual(
      byKind(manifests, 'Service')[0].spec.ports,
    );
  });

  it('watches all namespaces through a ClusterRole, with the configured keys and token', async () => {
    const objects = renders.get('all-namespaces')!;
    const [clusterRole] = byKind(objects, 'ClusterRole');
    expect(clusterRole.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      {
        apiGroups: ['leaderworkerset.x-k8s.io'],
        resources: ['leaderworkersets'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    expect(byKind(objects, 'ClusterRoleBinding')[0].roleRef.name).toBe(clusterRole.metadata.name);
    // The leases Role stays namespaced, in the release namespace.
    expect(byKind(objects, 'Role').map((r) => r.metadata.namespace)).toEqual([namespace]);
    const [deployment] = byKind(objects, 'Deployment');
    const vars = envOf(deployment);
    expect(deployment.spec.replicas).toBe(3);
    expect(vars.get('POOL_CONTROLLER_NAMESPACE')).toBe('*');
    expect(vars.get('POOL_CONTROLLER_SELECTOR')).toBe('app.example.com/pool,tier in (gpu)');
    expect(vars.get('POOL_CONTROLLER_POOL_LABEL')).toBe('app.example.com/pool');
    expect(vars.get('POOL_CONTROLLER_PORT_NAME')).toBe('serve');
    expect(vars.get('POOL_CONTROLLER_LEADER_ELECT_RESOURCE_NAME')).toBe('pool-controller-leader');
    expect(vars.get('POOL_CONTROLLER_LEADER_ELECT_LEASE_DURATION')).toBe('30s');
    expect(vars.get('POOL_CONTROLLER_RESYNC_PERIOD')).toBe('30m');
    expect(vars.get('POOL_CONTROLLER_ADMIN_TOKEN_FILE')).toBe(
      '/etc/pool-controller/admin-token/bearer',
    );
    expect(deployment.spec.template.spec.volumes).toContainEqual({
      name: 'admin-token',
      secret: {
        secretName: 'pool-controller-admin',
        items: [{ key: 'bearer', path: 'bearer' }],
      },
    });
    expect(byKind(objects, 'Secret')).toEqual([]); // an existing Secret is not created
  });

  it('configures routers, their key as a mounted file, EndpointSlices and the rest (all-features values)', async () => {
    const objects = renders.get('all-features')!;
    const [deployment] = byKind(objects, 'Deployment');
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    const vars = envOf(deployment);
    expect(vars.get('POOL_CONTROLLER_SGLANG_ROUTER')).toBe(
      'engine=http://engine-router:30000,trainer=https://trainer-router.inference.svc:8443,' +
        'prefill=http://pd-router:30000,role=prefill,decode=http://pd-router:30000,role=decode',
    );
    expect(vars.get('POOL_CONTROLLER_SGLANG_BOOTSTRAP_PORT_ANNOTATION')).toBe(
      'example.com/bootstrap-port',
    );
    // The key is a file from the Secret, never an environment value or secretKeyRef.
    expect(vars.get('POOL_CONTROLLER_SGLANG_ROUTER_API_KEY_FILE')).toBe(
      '/etc/pool-controller/sglang-router-api-key/api-key',
    );
    expect(JSON.stringify(container.env)).not.toContain('secretKeyRef');
    expect(pod.volumes).toContainEqual({
      name: 'sglang-router-api-key',
      secret: { secretName: 'router-credentials', items: [{ key: 'api-key', path: 'api-key' }] },
    });
    expect(container.volumeMounts).toContainEqual({
      name: 'sglang-router-api-key',
      mountPath: '/etc/pool-controller/sglang-router-api-key',
      readOnly: true,
    });
    // The EPP endpoints files: paths within the mount of the volume shared with the EPP.
    expect(vars.get('POOL_CONTROLLER_EPP_ENDPOINTS_FILE')).toBe(
      'engine=/var/run/epp/engine.yaml,prefill=/var/run/epp/prefill.yaml,role=prefill',
    );
    expect(pod.volumes).toContainEqual({
      name: 'epp-endpoints',
      persistentVolumeClaim: { claimName: 'epp-endpoints' },
    });
    expect(container.volumeMounts).toContainEqual({
      name: 'epp-endpoints',
      mountPath: '/var/run/epp',
    });
    expect(vars.get('POOL_CONTROLLER_PUBLISH_ENDPOINTSLICES')).toBe('true');
    expect(vars.get('POOL_CONTROLLER_ENDPOINTSLICE_SERVICE_SUFFIX')).toBe('-ready');
    expect(vars.get('POOL_CONTROLLER_SINK_ALLOW_LOOPBACK')).toBe('true');
    expect(vars.get('POOL_CONTROLLER_SINK_MODE')).toBe('observe');
    expect(vars.get('POOL_CONTROLLER_SINK_PANIC_THRESHOLD')).toBe('30');
    expect(vars.get('POOL_CONTROLLER_SGLANG_ROUTER_OWNERSHIP')).toBe('all');
    expect(vars.get('POOL_CONTROLLER_CELL_READINESS_GATE')).toBe('true');
    expect(vars.get('POOL_CONTROLLER_CELL_READINESS_GATE_CONDITION')).toBe(
      'example.com/cell-alive',
    );
    // Events are on by default: no variable, the rule in the watch Role.
    expect(vars.has('POOL_CONTROLLER_EVENTS')).toBe(false);
    expect(vars.get('POOL_CONTROLLER_DRIFT_INTERVAL')).toBe('30s');
    expect(container.args).toEqual(['--resync-period=1h']);
    expect(container.image).toBe(
      'registry.example/pool-controller@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    );
    expect(pod.priorityClassName).toBe('system-cluster-critical');
    expect(pod.volumes).toContainEqual({ name: 'ca', configMap: { name: 'router-ca' } });
    expect(container.volumeMounts).toContainEqual({
      name: 'ca',
      mountPath: '/etc/pool-controller/ca',
      readOnly: true,
    });
    expect(container.livenessProbe).toEqual({
      httpGet: { path: '/healthz', port: 'probes' },
      initialDelaySeconds: 5,
      periodSeconds: 20,
      timeoutSeconds: 3,
      failureThreshold: 5,
    });
    expect(container.readinessProbe).toMatchObject({ periodSeconds: 3, failureThreshold: 3 });

    // EndpointSlices: a Role where it watches (here the release namespace), bound to the account.
    const slices = byKind(objects, 'Role').find((r) => r.metadata.name.endsWith('-endpointslices'));
    expect(slices.metadata.namespace).toBe(namespace);
    expect(slices.rules).toEqual([
      {
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ]);
    const binding = byKind(objects, 'RoleBinding').find(
      (b) => b.roleRef.name === slices.metadata.name,
    );
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'pool-controller', namespace },
    ]);
    // The readiness gate: patch on pods/status where it watches, nothing else.
    const gate = byKind(objects, 'Role').find((r) => r.metadata.name.endsWith('-readiness-gate'));
    expect(gate.metadata.namespace).toBe(namespace);
    expect(gate.rules).toEqual([{ apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] }]);
    expect(
      byKind(objects, 'RoleBinding').find((b) => b.roleRef.name === gate.metadata.name).subjects,
    ).toEqual([{ kind: 'ServiceAccount', name: 'pool-controller', namespace }]);
    const watch = byKind(objects, 'Role').find((r) => r.metadata.name === 'pool-controller');
    expect(watch.rules).toContainEqual({
      apiGroups: ['events.k8s.io'],
      resources: ['events'],
      verbs: ['create', 'patch'],
    });
    // The Lease rule: create on leases; get and update on the one Lease only.
    const lease = byKind(objects, 'Role').find((r) => r.metadata.name.endsWith('-leader-election'));
    expect(lease.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['pool-controller'],
        verbs: ['get', 'update'],
      },
    ]);
    // The API port from the release namespace and the monitoring namespaces, nothing else.
    const [policy] = byKind(objects, 'NetworkPolicy');
    expect(policy.spec).toEqual({
      podSelector: { matchLabels: deployment.spec.selector.matchLabels },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            { podSelector: {} },
            { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
          ],
          ports: [{ port: 'http', protocol: 'TCP' }],
        },
      ],
    });
  });

  it('gives EPP endpoints files an emptyDir when no volume is named', async () => {
    const objects = await template(VALUES.default, [
      '--set',
      'eppEndpointsFile.files[0].pool=engine',
      '--set',
      'eppEndpointsFile.files[0].file=engine.yaml',
    ]);
    const [deployment] = byKind(objects, 'Deployment');
    expect(envOf(deployment).get('POOL_CONTROLLER_EPP_ENDPOINTS_FILE')).toBe(
      'engine=/var/run/pool-controller/epp/engine.yaml',
    );
    expect(deployment.spec.template.spec.volumes).toContainEqual({
      name: 'epp-endpoints',
      emptyDir: { sizeLimit: '16Mi' },
    });
  });

  it('grants EndpointSlices through a ClusterRole when it watches all namespaces', async () => {
    const objects = await template(VALUES['all-features'], ['--set', 'watch.namespace=*']);
    const clusterRoles = byKind(objects, 'ClusterRole').map((r) => r.metadata.name);
    expect(clusterRoles).toEqual([
      'pool-controller',
      'pool-controller-readiness-gate',
      'pool-controller-endpointslices',
    ]);
    const bindings = byKind(objects, 'ClusterRoleBinding').map((b) => b.roleRef.name);
    expect(bindings).toEqual(clusterRoles);
  });

  it('renders the monitoring objects from deploy/monitoring/, and a named namespace a Role there', async () => {
    const objects = renders.get('monitoring')!;
    const monitoring = new URL('deploy/monitoring/', ROOT);
    const rules = parse(await readFile(new URL('prometheus-rules.yaml', monitoring), 'utf8'));
    const [rule] = byKind(objects, 'PrometheusRule');
    expect(rule.metadata.labels.release).toBe('kube-prometheus-stack');
    const runbook = (r: Any) => r.annotations.runbook;
    const chartRules = rule.spec.groups[0].rules;
    expect(chartRules.map((r: Any) => r.alert)).toEqual(
      rules.spec.groups[0].rules.map((r: Any) => r.alert),
    );
    expect(chartRules.map((r: Any) => r.expr)).toEqual(
      rules.spec.groups[0].rules.map((r: Any) => r.expr),
    );
    expect(chartRules.map(runbook)).toEqual(
      rules.spec.groups[0].rules.map((r: Any) =>
        runbook(r).replace('docs/operations.md', 'https://runbooks.example.com/pool-controller'),
      ),
    );
    expect(chartRules.map((r: Any) => r.annotations.runbook_url)).toEqual(chartRules.map(runbook));
    const [monitor] = byKind(objects, 'ServiceMonitor');
    const [service] = byKind(objects, 'Service');
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints[0].port).toBe(service.spec.ports[0].name);
    const dashboards = byKind(objects, 'ConfigMap');
    expect(dashboards).toHaveLength(1);
    expect(dashboards[0].metadata.labels.grafana_dashboard).toBe('1');
    expect(JSON.parse(dashboards[0].data['pool-controller.json'])).toEqual(
      JSON.parse(await readFile(new URL('grafana-dashboard.json', monitoring), 'utf8')),
    );
    // One replica, no leader election: no leases Role, no PodDisruptionBudget. The Events about
    // the controller's own pod need a Role in the release namespace.
    expect(byKind(objects, 'PodDisruptionBudget')).toEqual([]);
    const roles = byKind(objects, 'Role');
    expect(roles.map((r) => r.metadata.namespace)).toEqual([watched, namespace]);
    expect(roles[1].rules).toEqual([
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
    expect(byKind(objects, 'RoleBinding')[0].subjects).toEqual([
      { kind: 'ServiceAccount', name: 'pool-controller', namespace },
    ]);
    expect(envOf(byKind(objects, 'Deployment')[0]).get('POOL_CONTROLLER_NAMESPACE')).toBe(watched);
    expect(byKind(objects, 'Secret')).toHaveLength(1);
  });

  it("passes the dry run with deploy/monitoring/'s own objects too (against the same CRDs)", async () => {
    for (const file of ['servicemonitor.yaml', 'prometheus-rules.yaml']) {
      const object = parse(
        await readFile(new URL(`deploy/monitoring/${file}`, ROOT), 'utf8'),
      ) as Manifest;
      const answer = await api.dryRunApply(object, namespace);
      expect(answer.status, `${file}: ${answer.body}`).toBe(201);
    }
  });

  it('refuses a misspelt key and values of the wrong kind (values.schema.json)', async () => {
    for (const [set, message] of [
      ['replicaCont=2', /additional properties 'replicaCont' not allowed/],
      ['logLevel=verbose', /\/logLevel/],
      ['replicaCount=0', /\/replicaCount/],
      ['leaderElection.leaseDuration=15', /\/leaderElection\/leaseDuration/],
      ['watch.namespace=Not_A_Namespace', /\/watch\/namespace/],
      ['image.digest=latest', /\/image\/digest/],
      ['sglangRouters[0].pool=engine', /\/sglangRouters\/0.*url/],
      ['sglangRouters[0].url=http://user:pw@router:3000', /\/sglangRouters\/0/],
      ['sglangRouters[0].role=encode', /\/sglangRouters\/0/],
      ['sglangBootstrapPortAnnotation=not a key', /\/sglangBootstrapPortAnnotation/],
      ['endpointSlices.enabeld=true', /additional properties 'enabeld' not allowed/],
      ['probes.liveness.periodSeconds=0', /\/probes\/liveness\/periodSeconds/],
    ] as const) {
      await expect(template([], ['--set', set]), set).rejects.toThrow(message);
    }
  });

  it("renders the image the README's install block built, from the block's own Helm arguments", async () => {
    const install = runReadmeInstall();
    try {
      const [helmInstall] = install.calls.filter((c) => c.tool === 'helm');
      const args = helmInstall?.args ?? [];
      const sets = args.flatMap((a, i) => (args[i - 1] === '--set' ? ['--set', a] : []));
      expect(sets.length).toBeGreaterThan(0);
      const objects = await template([], sets);
      const deployment = objects.find((o) => o.kind === 'Deployment') as Any;
      expect(deployment.spec.template.spec.containers[0].image).toBe(install.reference);
    } finally {
      rmSync(install.dir, { recursive: true, force: true });
    }
  });

  it('refuses several replicas without leader election', async () => {
    await expect(template([], ['--set', 'leaderElection.enabled=false'])).rejects.toThrow(
      /replicaCount > 1 needs leaderElection.enabled/,
    );
  });

  it('would catch a misspelt field in a monitoring object (the minimal CRDs are not vacuous)', async () => {
    const [monitor] = byKind(renders.get('monitoring')!, 'ServiceMonitor');
    monitor.spec.endpoints[0].intervall = '30s';
    const answer = await api.dryRunApply(monitor, namespace);
    expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
    expect(answer.body).toContain('intervall');
  });
});
