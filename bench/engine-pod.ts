/**
 * Deterministic engine pods shaped the way the API server sends them for an SGLang engine run as a
 * LeaderWorkerSet group: LWS and StatefulSet labels, annotations, owner references, the
 * `managedFields` of the controller and the kubelet, a full container spec (command, ports, env,
 * resources, probes, mounts), the service-account volume, tolerations, and a running status with
 * conditions and container statuses. About 5.6 KB of JSON each, most of it fields the controller
 * never reads, which is exactly what makes decoding a LIST expensive.
 *
 * Deterministic (no clock, no randomness) so every variant of `bench:sync` and every run parses
 * the same bytes.
 */

/** Pods per LWS group (one leader, three workers): a multi-node engine. */
export const ENGINE_GROUP_SIZE = 4;
/** Groups per LeaderWorkerSet, so 10,000 pods spread over several LWS objects as in a real pool. */
export const GROUPS_PER_LWS = 250;
export const ENGINE_NAMESPACE = 'inference';

/** A 32-bit mix (splitmix-style) of an index and a salt: stable pseudo-random digits. */
function mix(index: number, salt: number): number {
  let x = (index * 0x9e3779b1 + salt * 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d) >>> 0;
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/** `length` hex digits derived from (index, salt). */
function hex(index: number, salt: number, length: number): string {
  let out = '';
  for (let word = 0; out.length < length; word += 1) {
    out += mix(index, salt * 131 + word)
      .toString(16)
      .padStart(8, '0');
  }
  return out.slice(0, length);
}

function uuid(index: number, salt: number): string {
  const h = hex(index, salt, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

/** Seconds after a fixed epoch, as RFC 3339 (the API server's timestamp form). */
function timestamp(offsetSeconds: number): string {
  return new Date(Date.UTC(2026, 10, 2, 8, 0, 0) + offsetSeconds * 1000)
    .toISOString()
    .replace('.000Z', 'Z');
}

/** The controller-manager's field ownership of the pod spec, as `fieldsV1` (abridged, realistic). */
function specFields(leader: boolean, ownerUid: string): Record<string, unknown> {
  return {
    'f:metadata': {
      'f:annotations': {
        '.': {},
        'f:leaderworkerset.sigs.k8s.io/size': {},
        ...(leader ? {} : { 'f:leaderworkerset.sigs.k8s.io/leader-name': {} }),
      },
      'f:generateName': {},
      'f:labels': {
        '.': {},
        'f:apps.kubernetes.io/pod-index': {},
        'f:controller-revision-hash': {},
        'f:leaderworkerset.sigs.k8s.io/group-index': {},
        'f:leaderworkerset.sigs.k8s.io/group-key': {},
        'f:leaderworkerset.sigs.k8s.io/name': {},
        'f:leaderworkerset.sigs.k8s.io/template-revision-hash': {},
        'f:leaderworkerset.sigs.k8s.io/worker-index': {},
        'f:statefulset.kubernetes.io/pod-name': {},
      },
      'f:ownerReferences': { '.': {}, [`k:{"uid":"${ownerUid}"}`]: {} },
    },
    'f:spec': {
      'f:containers': {
        'k:{"name":"sglang"}': {
          '.': {},
          'f:command': {},
          'f:env': {
            '.': {},
            'k:{"name":"LWS_LEADER_ADDRESS"}': { '.': {}, 'f:name': {}, 'f:value': {} },
            'k:{"name":"LWS_WORKER_INDEX"}': { '.': {}, 'f:name': {}, 'f:valueFrom': {} },
          },
          'f:image': {},
          'f:imagePullPolicy': {},
          'f:name': {},
          'f:ports': { '.': {}, 'k:{"containerPort":30000,"protocol":"TCP"}': {} },
          'f:resources': { '.': {}, 'f:limits': {}, 'f:requests': {} },
          'f:volumeMounts': {},
        },
      },
      'f:hostname': {},
      'f:subdomain': {},
      'f:volumes': {},
    },
  };
}

/** The kubelet's field ownership of the status subresource. */
function statusFields(podIP: string): Record<string, unknown> {
  return {
    'f:status': {
      'f:conditions': {
        'k:{"type":"ContainersReady"}': { '.': {}, 'f:status': {}, 'f:type': {} },
        'k:{"type":"Initialized"}': { '.': {}, 'f:status': {}, 'f:type': {} },
        'k:{"type":"PodReadyToStartContainers"}': { '.': {}, 'f:status': {}, 'f:type': {} },
        'k:{"type":"Ready"}': { '.': {}, 'f:status': {}, 'f:type': {} },
      },
      'f:containerStatuses': {},
      'f:hostIP': {},
      'f:hostIPs': {},
      'f:phase': {},
      'f:podIP': {},
      'f:podIPs': { '.': {}, [`k:{"ip":"${podIP}"}`]: { '.': {}, 'f:ip': {} } },
      'f:startTime': {},
    },
  };
}

/**
 * Pod number `index` of the engine pool, as one LIST item (no `kind`/`apiVersion`: the API server
 * omits them on list items).
 */
export function enginePod(index: number, resourceVersion: number): Record<string, unknown> {
  const groupNumber = Math.floor(index / ENGINE_GROUP_SIZE);
  const worker = index % ENGINE_GROUP_SIZE;
  const lwsIndex = Math.floor(groupNumber / GROUPS_PER_LWS);
  const group = groupNumber % GROUPS_PER_LWS;
  const lws = `engine-${String.fromCharCode(97 + (lwsIndex % 26))}${Math.floor(lwsIndex / 26) || ''}`;
  const leaderName = `${lws}-${group}`;
  const name = worker === 0 ? leaderName : `${leaderName}-${worker}`;
  const leader = worker === 0;
  const created = groupNumber * 3 + worker;
  const node = `gpu-node-${String(mix(index, 7) % 1250).padStart(4, '0')}`;
  const hostIP = `10.128.${mix(index, 8) % 64}.${mix(index, 9) % 250}`;
  const podIP = `10.${64 + (index >> 16)}.${(index >> 8) & 255}.${index & 255}`;
  const revision = hex(lwsIndex, 11, 10);
  const ownerUid = leader ? uuid(lwsIndex, 13) : uuid(groupNumber, 12);
  return {
    metadata: {
      name,
      generateName: `${leaderName}-`,
      namespace: ENGINE_NAMESPACE,
      uid: uuid(index, 1),
      resourceVersion: String(resourceVersion),
      creationTimestamp: timestamp(created),
      labels: {
        'apps.kubernetes.io/pod-index': String(worker),
        'controller-revision-hash': `${leaderName}-${hex(groupNumber, 2, 10)}`,
        'leaderworkerset.sigs.k8s.io/group-index': String(group),
        'leaderworkerset.sigs.k8s.io/group-key': hex(groupNumber, 3, 40),
        'leaderworkerset.sigs.k8s.io/name': lws,
        'leaderworkerset.sigs.k8s.io/template-revision-hash': revision,
        'leaderworkerset.sigs.k8s.io/worker-index': String(worker),
        'statefulset.kubernetes.io/pod-name': name,
      },
      annotations: {
        'leaderworkerset.sigs.k8s.io/size': String(ENGINE_GROUP_SIZE),
        ...(leader ? {} : { 'leaderworkerset.sigs.k8s.io/leader-name': leaderName }),
      },
      ownerReferences: [
        {
          // Leaders belong to the LWS's leader StatefulSet, workers to their group's StatefulSet.
          apiVersion: 'apps/v1',
          kind: 'StatefulSet',
          name: leader ? lws : leaderName,
          uid: ownerUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: timestamp(created),
          fieldsType: 'FieldsV1',
          fieldsV1: specFields(leader, ownerUid),
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: timestamp(created + 95),
          fieldsType: 'FieldsV1',
          fieldsV1: statusFields(podIP),
          subresource: 'status',
        },
      ],
    },
    spec: {
      volumes: [
        {
          name: `kube-api-access-${hex(index, 4, 5)}`,
          projected: {
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              {
                configMap: {
                  name: 'kube-root-ca.crt',
                  items: [{ key: 'ca.crt', path: 'ca.crt' }],
                },
              },
            ],
            defaultMode: 420,
          },
        },
      ],
      containers: [
        {
          name: 'sglang',
          image: 'lmsysorg/sglang:v0.5.4-cu129',
          command: [
            'python3',
            '-m',
            'sglang.launch_server',
            '--model-path',
            'deepseek-ai/DeepSeek-V3',
            '--tp',
            '32',
            '--nnodes',
            String(ENGINE_GROUP_SIZE),
            '--node-rank',
            '$(LWS_WORKER_INDEX)',
            '--port',
            '30000',
          ],
          ports: [{ name: 'http', containerPort: 30000, protocol: 'TCP' }],
          env: [
            {
              name: 'LWS_LEADER_ADDRESS',
              value: `${leaderName}.${lws}.${ENGINE_NAMESPACE}`,
            },
            {
              name: 'LWS_WORKER_INDEX',
              valueFrom: {
                fieldRef: {
                  apiVersion: 'v1',
                  fieldPath: "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']",
                },
              },
            },
          ],
          resources: {
            limits: { 'nvidia.com/gpu': '8', memory: '1536Gi' },
            requests: { cpu: '96', 'nvidia.com/gpu': '8', memory: '1536Gi' },
          },
          volumeMounts: [
            {
              name: `kube-api-access-${hex(index, 4, 5)}`,
              readOnly: true,
              mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
            },
          ],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      serviceAccount: 'default',
      nodeName: node,
      securityContext: {},
      hostname: name,
      subdomain: lws,
      schedulerName: 'default-scheduler',
      tolerations: [
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
        {
          key: 'node.kubernetes.io/unreachable',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {
      phase: 'Running',
      conditions: [
        {
          type: 'PodReadyToStartContainers',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: timestamp(created + 12),
        },
        {
          type: 'Initialized',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: timestamp(created + 1),
        },
        {
          type: 'Ready',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: timestamp(created + 95),
        },
        {
          type: 'ContainersReady',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: timestamp(created + 95),
        },
        {
          type: 'PodScheduled',
          status: 'True',
          lastProbeTime: null,
          lastTransitionTime: timestamp(created),
        },
      ],
      hostIP,
      hostIPs: [{ ip: hostIP }],
      podIP,
      podIPs: [{ ip: podIP }],
      startTime: timestamp(created + 1),
      containerStatuses: [
        {
          name: 'sglang',
          state: { running: { startedAt: timestamp(created + 12) } },
          lastState: {},
          ready: true,
          restartCount: 0,
          image: 'docker.io/lmsysorg/sglang:v0.5.4-cu129',
          imageID: `docker.io/lmsysorg/sglang@sha256:${hex(0, 5, 64)}`,
          containerID: `containerd://${hex(index, 6, 64)}`,
          started: true,
        },
      ],
      qosClass: 'Burstable',
    },
  };
}
