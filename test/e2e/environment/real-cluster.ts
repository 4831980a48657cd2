/**
 * The real-cluster lane's controllers beside an e2e API server: kube-controller-manager and
 * kube-scheduler (the API server's own release), kwok fake nodes that turn bound pods Running and
 * Ready, and the LeaderWorkerSet controller manager with its CRDs and its webhooks. Pods are then
 * made by the real controllers (LWS → leader StatefulSet → leader pod → worker StatefulSet →
 * workers, the garbage collector removing what an owner left), not written by the tests.
 *
 * Usage, after startKubeEnvironment():
 *
 *   const cluster = await startRealCluster(env);
 *   ... create a LeaderWorkerSet, read its pods ...
 *   await cluster.assertPodIpsInRange(namespace);
 *   await cluster.stop(); // before env.stop()
 *
 * What had to be learned (issue 35):
 * - LWS's pod webhook, which writes `worker-index` and `group-key`, cannot be switched off, and no
 *   Service or cert-manager exists here: it is served on loopback with the API server's own
 *   serving certificate (127.0.0.1, and the environment's CA) and registered by
 *   `clientConfig.url`, with `internalCertManagement.enable: false`. The manager starts only once
 *   discovery serves the LWS API, and the webhooks are registered only once it listens (with
 *   `failurePolicy: Fail`, an unregistered-but-dead webhook would refuse every pod).
 * - kwok has no stages of its own; kwok.yaml beside this file is its configuration and stages.
 * - kwok's pod IPs come from the node's podCIDR: every node here gets a /16 in 127.0.0.0/8, so
 *   every pod IP is a loopback address of this machine (kwok's allocator does not stop at a
 *   range's end; a /16 per node is far more than the lane's pods). `assertPodIpsInRange` checks
 *   it; no test sends traffic to any address outside it. A sink that refuses loopback addresses
 *   (EndpointSlices) gets TEST_NET_POD_RANGE instead (`podRange: 'test-net'`): one node, a /24
 *   of documentation addresses no test ever connects to, at most 254 pods (the allocator would
 *   run past the /24's end; the range check would then fail).
 *
 * Each process is a ManagedProcess in the environment's pid folder, so the environment's reaper
 * kills them if the test process dies first.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApisApi, CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { recipeDir } from './binaries.js';
import { freeLoopbackPort } from './free-port.js';
import type { KubeEnvironment } from './kube-environment.js';
import { ManagedProcess } from './managed-process.js';
import { ensureTools } from './tools.js';

/** Every pod IP of the lane is in this range: loopback, so nothing ever leaves the machine. */
export const LANE_POD_RANGE = '127.0.0.0/8';
/**
 * The pod range for sinks that refuse loopback (an EndpointSlice's addresses may not be): TEST-NET-1
 * (RFC 5737, documentation only, routed nowhere). Tests never connect to it.
 */
export const TEST_NET_POD_RANGE = '192.0.2.0/24';
/** kwok manages only nodes with this annotation (kwok.yaml), so no other test's node is touched. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
/** The LeaderWorkerSet API group, version and the resource the manager serves. */
export const LWS_GROUP = 'leaderworkerset.x-k8s.io';
export const LWS_VERSION = 'v1';
/**
 * Nodes by default: two, so the scheduler has a choice and a group can span nodes, as it does on
 * GPU nodes; the bench asks for more.
 */
export const DEFAULT_NODES = 2;
/** How long the controllers get to come up: cold starts on a loaded 2-core machine. */
export const CLUSTER_READY_TIMEOUT_MS = 120_000;
/** Client rate limits of the controllers: the bench creates thousands of pods. */
const CONTROLLER_QPS = 200;
const CONTROLLER_BURST = 400;
/** The LWS manager's log line once its LeaderWorkerSet controller runs (controller-runtime's). */
const LWS_CONTROLLER_STARTED = /Starting workers.*"controller": "leaderworkerset"/;
/** Poll interval while waiting for discovery, a port or nodes. */
const POLL_MS = 200;

/** The binaries the lane runs, and the LWS release's manifests. */
export interface RealClusterBinaries {
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  readonly kwok: string;
  readonly lwsManager: string;
  /** The LWS release's CRD files (config/crd/bases). */
  readonly lwsCrds: readonly string[];
  /** The LWS release's webhook manifests (config/webhook/manifests.yaml). */
  readonly lwsWebhooks: string;
}

/** Builds what is missing (tools.sh kube-controllers kwok lws) and returns the paths. */
export async function ensureRealClusterBinaries(): Promise<RealClusterBinaries> {
  const paths = await ensureTools(['kube-controllers', 'kwok', 'lws']);
  const need = (name: string): string => {
    const path = paths.get(name);
    if (!path) throw new Error(`e2e: tools.sh printed no path for ${name}`);
    return path;
  };
  const lwsManager = need('lws-manager');
  const lwsDir = join(lwsManager, '..');
  const crdDir = join(lwsDir, 'crds');
  return {
    kubeControllerManager: need('kube-controller-manager'),
    kubeScheduler: need('kube-scheduler'),
    kwok: need('kwok'),
    lwsManager,
    lwsCrds: readdirSync(crdDir)
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => join(crdDir, f)),
    lwsWebhooks: join(lwsDir, 'webhooks.yaml'),
  };
}

function ipv4ToNumber(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

/** Whether `ip` (IPv4, dotted) lies in `cidr` (IPv4); anything unparsable is outside. */
export function ipInRange(ip: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const address = ipv4ToNumber(ip);
  const start = base === undefined ? undefined : ipv4ToNumber(base);
  const bits = Number(bitsText);
  if (address === undefined || start === undefined || !Number.isInteger(bits)) return false;
  if (bits < 0 || bits > 32) return false;
  const size = 2 ** (32 - bits);
  const first = Math.floor(start / size) * size;
  return address >= first && address < first + size;
}

/**
 * Every IP of `pods` (podIP and podIPs) outside `range`, as `namespace/name ip`; pods without an
 * IP yet are fine. Empty when all are in range.
 */
export function podIpsOutOfRange(pods: readonly V1Pod[], range = LANE_POD_RANGE): string[] {
  const outside: string[] = [];
  for (const pod of pods) {
    const ips = new Set<string>();
    if (pod.status?.podIP) ips.add(pod.status.podIP);
    for (const entry of pod.status?.podIPs ?? []) if (entry.ip) ips.add(entry.ip);
    for (const ip of ips) {
      if (!ipInRange(ip, range))
        outside.push(`${pod.metadata?.namespace}/${pod.metadata?.name} ${ip}`);
    }
  }
  return outside;
}

/** Throws naming every pod with an IP outside `range`: no test may send traffic there. */
export function assertPodIpsInRange(pods: readonly V1Pod[], range = LANE_POD_RANGE): void {
  const outside = podIpsOutOfRange(pods, range);
  if (outside.length > 0) {
    throw new Error(
      `e2e: pod IPs outside the lane's range ${range} (no test may reach them): ${outside.join(', ')}`,
    );
  }
}

/** The podCIDR of the lane's node `index`: a /16 of 127.0.0.0/8 of its own. */
export function nodePodCidr(index: number): string {
  return `127.${16 + index}.0.0/16`;
}

export interface RealClusterOptions {
  /** kwok nodes to register (default DEFAULT_NODES; one with `podRange: 'test-net'`). */
  readonly nodes?: number;
  /** Where pod IPs come from: loopback /16s (default), or TEST_NET_POD_RANGE on one node. */
  readonly podRange?: 'loopback' | 'test-net';
  /** The binaries to run; default: ensureRealClusterBinaries() (built when missing). */
  readonly binaries?: RealClusterBinaries;
  readonly readyTimeoutMs?: number;
}

export interface RealCluster {
  readonly binaries: RealClusterBinaries;
  /** The kwok nodes' names. */
  readonly nodes: readonly string[];
  /** The lane's processes, for log tails and JSON lines. */
  readonly processes: readonly ManagedProcess[];
  /** The range every pod IP must be in: LANE_POD_RANGE or TEST_NET_POD_RANGE. */
  readonly podRange: string;
  /** Lists the pods of `namespace` and asserts every pod IP is in `podRange`. */
  assertPodIpsInRange(namespace: string): Promise<void>;
  /** The last lines of every controller's log, for failure messages. */
  logTails(): string;
  /** Unregisters the webhooks and stops every controller; never throws. */
  stop(): Promise<void>;
}

function waitForPort(port: number, process: ManagedProcess, deadline: number): Promise<void> {
  const attempt = (): Promise<boolean> =>
    new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  return (async () => {
    while (Date.now() < deadline) {
      if (process.exitStatus) break;
      if (await attempt()) return;
      await sleep(POLL_MS);
    }
    throw new Error(
      `e2e: ${process.spec.name} did not listen on 127.0.0.1:${port} ` +
        `(${process.exitStatus ? 'it exited' : 'timed out'})\n${process.describeFailure()}`,
    );
  })();
}

async function waitUntil(what: string, deadline: number, probe: () => Promise<boolean>) {
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await probe()) return;
    } catch (error) {
      last = error;
    }
    await sleep(POLL_MS);
  }
  throw new Error(`e2e: timed out waiting for ${what}${last ? `: ${last}` : ''}`);
}

/**
 * Starts kube-scheduler, kube-controller-manager, kwok (with `nodes` fake nodes) and the LWS
 * manager beside `env`'s apiserver, and resolves once nodes are Ready, the LWS API is served and
 * its webhooks are registered. On failure, stops what it started and throws with their log tails.
 */
export async function startRealCluster(
  env: KubeEnvironment,
  options: RealClusterOptions = {},
): Promise<RealCluster> {
  const binaries = options.binaries ?? (await ensureRealClusterBinaries());
  const deadline = Date.now() + (options.readyTimeoutMs ?? CLUSTER_READY_TIMEOUT_MS);
  const dir = join(env.stateDir, 'real-cluster');
  mkdirSync(dir, { recursive: true });
  const pidDir = join(env.stateDir, 'pids');
  const core = env.kubeConfig.makeApiClient(CoreV1Api);
  // Manifests go through the custom-objects client, which sends them as written: the typed
  // clients drop fields their models spell differently (`x-kubernetes-int-or-string`).
  const objects = env.kubeConfig.makeApiClient(CustomObjectsApi);
  const apis = env.kubeConfig.makeApiClient(ApisApi);
  const processes: ManagedProcess[] = [];
  const webhooks: Array<{ plural: string; name: string }> = [];
  const managed = (name: string, command: string, args: string[]): ManagedProcess => {
    const process = new ManagedProcess({
      name,
      command,
      args,
      logFile: join(dir, `${name}.log`),
      pidDir,
    });
    processes.push(process);
    process.start();
    return process;
  };
  const logTails = (): string => processes.map((p) => p.describeFailure()).join('\n');
  const stop = async (): Promise<void> => {
    // Webhooks first: with failurePolicy Fail, a registered webhook whose server is gone would
    // refuse every pod the environment's later users create.
    for (const { plural, name } of webhooks) {
      await objects
        .deleteClusterCustomObject({ ...ADMISSION, plural, name })
        .catch(() => undefined);
    }
    for (const process of [...processes].reverse()) {
      try {
        await process.stop();
      } catch (error) {
        console.warn(`e2e real-cluster: stopping ${process.spec.name} failed (ignored): ${error}`);
      }
    }
  };

  try {
    // The nodes first: kwok takes each one's podCIDR from it, the scheduler binds to them.
    const testNet = options.podRange === 'test-net';
    if (testNet && (options.nodes ?? 1) !== 1) {
      throw new Error('e2e: the TEST-NET pod range is one /24: one node');
    }
    const podRange = testNet ? TEST_NET_POD_RANGE : LANE_POD_RANGE;
    const nodes: string[] = [];
    for (let i = 0; i < (options.nodes ?? (testNet ? 1 : DEFAULT_NODES)); i += 1) {
      const name = `kwok-node-${i}`;
      const podCidr = testNet ? TEST_NET_POD_RANGE : nodePodCidr(i);
      await core.createNode({
        body: {
          metadata: {
            name,
            annotations: { [KWOK_NODE_ANNOTATION]: 'fake' },
            labels: { 'kubernetes.io/hostname': name, type: 'kwok' },
          },
          spec: { podCIDR: podCidr, podCIDRs: [podCidr] },
        },
      });
      nodes.push(name);
    }

    managed('kube-scheduler', binaries.kubeScheduler, [
      `--kubeconfig=${env.kubeconfigPath}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);
    managed('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${env.kubeconfigPath}`,
      '--leader-elect=false',
      '--secure-port=0',
      // Pods get their IPs from kwok, from the podCIDR set above: nothing allocates CIDRs.
      '--allocate-node-cidrs=false',
      `--root-ca-file=${env.caPath}`,
      `--service-account-private-key-file=${join(env.stateDir, 'service-account.key')}`,
      '--use-service-account-credentials=false',
      `--kube-api-qps=${CONTROLLER_QPS}`,
      `--kube-api-burst=${CONTROLLER_BURST}`,
      '--v=1',
    ]);
    managed('kwok', binaries.kwok, [
      `--kubeconfig=${env.kubeconfigPath}`,
      `--config=${join(recipeDir, 'kwok.yaml')}`,
    ]);
    await waitUntil('the kwok nodes to be Ready', deadline, async () => {
      const list = await core.listNode({ labelSelector: 'type=kwok' });
      return (
        list.items.length === nodes.length &&
        list.items.every((n) =>
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        )
      );
    });

    // The LWS CRDs, then the manager once discovery serves them.
    for (const file of binaries.lwsCrds) {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
        const crd = doc.toJS() as { kind?: string } | null;
        if (crd?.kind !== 'CustomResourceDefinition') continue;
        await objects.createClusterCustomObject({
          group: 'apiextensions.k8s.io',
          version: 'v1',
          plural: 'customresourcedefinitions',
          body: crd,
        });
      }
    }
    await waitUntil(`discovery to serve ${LWS_GROUP}/${LWS_VERSION}`, deadline, async () => {
      const groups = await apis.getAPIVersions();
      if (
        !groups.groups.some(
          (g) => g.name === LWS_GROUP && g.versions.some((v) => v.version === LWS_VERSION),
        )
      )
        return false;
      // Discovery can list the group a moment before its handler serves it (404 until then).
      await objects.listClusterCustomObject({
        group: LWS_GROUP,
        version: LWS_VERSION,
        plural: 'leaderworkersets',
      });
      return true;
    });

    const webhookPort = await freeLoopbackPort();
    const certDir = join(dir, 'webhook-certs');
    mkdirSync(certDir, { recursive: true });
    writeFileSync(join(certDir, 'tls.crt'), readFileSync(env.caPath));
    writeFileSync(join(certDir, 'tls.key'), readFileSync(env.servingKeyPath), { mode: 0o600 });
    const config = join(dir, 'lws-config.yaml');
    writeFileSync(
      config,
      [
        'apiVersion: config.lws.x-k8s.io/v1alpha1',
        'kind: Configuration',
        'leaderElection:',
        '  leaderElect: false',
        'internalCertManagement:',
        '  enable: false',
        'webhook:',
        `  port: ${webhookPort}`,
        '  host: 127.0.0.1',
        `  certDir: ${certDir}`,
        'metrics:',
        '  bindAddress: "0"',
        'health:',
        '  healthProbeBindAddress: "0"',
        'clientConnection:',
        `  qps: ${CONTROLLER_QPS}`,
        `  burst: ${CONTROLLER_BURST}`,
        '',
      ].join('\n'),
    );
    const lws = managed('lws-manager', binaries.lwsManager, [
      `--config=${config}`,
      `--kubeconfig=${env.kubeconfigPath}`,
    ]);
    await waitForPort(webhookPort, lws, deadline);
    // The webhook server listens before the controllers run; the LWS controller's workers start
    // only once its informers synced (its REST mapper may first miss the new CRD and retry).
    await waitUntil('the LeaderWorkerSet controller to start', deadline, async () => {
      if (lws.exitStatus) throw new Error(`lws-manager exited\n${lws.describeFailure()}`);
      return LWS_CONTROLLER_STARTED.test(readFileSync(lws.spec.logFile, 'utf8'));
    });
    await registerWebhooks(env, objects, binaries.lwsWebhooks, webhookPort, webhooks);
    // None of them serves a health port here: one that exited on a bad flag shows only this way.
    const exited = processes.filter((p) => !p.running);
    if (exited.length > 0) {
      throw new Error(`e2e: ${exited.map((p) => p.spec.name).join(', ')} exited while starting`);
    }

    return {
      binaries,
      nodes,
      processes,
      podRange,
      async assertPodIpsInRange(namespace) {
        const pods = await core.listNamespacedPod({ namespace });
        assertPodIpsInRange(pods.items, podRange);
      },
      logTails,
      stop,
    };
  } catch (error) {
    console.error(`e2e real-cluster: failed to start: ${error}\n${logTails()}`);
    await stop();
    throw error;
  }
}

/** Where webhook configurations live, for the custom-objects client. */
const ADMISSION = { group: 'admissionregistration.k8s.io', version: 'v1' } as const;
const WEBHOOK_PLURALS: Record<string, string> = {
  MutatingWebhookConfiguration: 'mutatingwebhookconfigurations',
  ValidatingWebhookConfiguration: 'validatingwebhookconfigurations',
};

/**
 * Registers the release's webhook configurations with each `clientConfig.service` replaced by a
 * URL on loopback and the environment's CA as caBundle; rules, paths and failure policies stay the
 * release's. Records each one in `registered` so stop() can remove it.
 */
async function registerWebhooks(
  env: KubeEnvironment,
  objects: CustomObjectsApi,
  manifests: string,
  port: number,
  registered: Array<{ plural: string; name: string }>,
): Promise<void> {
  const caBundle = readFileSync(env.caPath).toString('base64');
  type Hook = { clientConfig?: { service?: { path?: string } } };
  type Configuration = { kind?: string; metadata?: { name?: string }; webhooks?: Hook[] };
  for (const doc of parseAllDocuments(readFileSync(manifests, 'utf8'))) {
    const object = doc.toJS() as Configuration | null;
    const plural = object?.kind ? WEBHOOK_PLURALS[object.kind] : undefined;
    if (!object || !plural) continue;
    const name = `lws-${object.metadata?.name}`;
    const webhooks = (object.webhooks ?? []).map((hook) => ({
      ...hook,
      clientConfig: {
        url: `https://127.0.0.1:${port}${hook.clientConfig?.service?.path ?? '/'}`,
        caBundle,
      },
    }));
    await objects.createClusterCustomObject({
      ...ADMISSION,
      plural,
      body: { ...object, metadata: { name }, webhooks },
    });
    registered.push({ plural, name });
  }
}
