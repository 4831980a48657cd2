/**
 * The service image, built from the Dockerfile by `scripts/image.sh build`, run the way the chart
 * runs it (support-image.ts): as uid 1000 with a read-only root filesystem and no capabilities, it
 * serves /healthz, /readyz and the simulated cells, exits 0 on SIGTERM, and with a mounted
 * kubeconfig it watches this layer's real apiserver as the unprivileged user bound to the shipped
 * Roles.
 *
 * The image is named by POOL_CONTROLLER_IMAGE (.ci/run builds it and sets it before the e2e
 * step). Without it the file is skipped with the reason printed, except in CI (or with
 * POOL_K8S_REQUIRE=1), where a skip would hide a broken image step, so it fails instead.
 */
import { chmodSync, copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeEnvironmentRequired } from './environment/binaries.js';
import { FakeKubelet, type KubeEnvironment, startKubeEnvironment } from './environment/index.js';
import { ImageContainer, KUBECONFIG_IN_CONTAINER } from './support-image.js';
import {
  bindShippedRoles,
  type Cell,
  LEADER_ELECTION_ROLE,
  lwsPod,
  ROLE,
  waitFor,
} from './support-service.js';

const IMAGE = process.env.POOL_CONTROLLER_IMAGE;
const unavailable = IMAGE
  ? undefined
  : 'POOL_CONTROLLER_IMAGE is not set (build the image with `scripts/image.sh build`, then set it to localhost/pool-controller:dev)';
if (unavailable && !kubeEnvironmentRequired()) console.log(`image e2e: skipped: ${unavailable}`);

/** package.json's version, which the image reports. */
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;

/** Every capability bit clear, as /proc/<pid>/status prints it. */
const NO_CAPABILITIES = '0000000000000000';

async function ok(url: string): Promise<true | undefined> {
  return (await fetch(url)).status === 200 ? true : undefined;
}

if (unavailable && kubeEnvironmentRequired()) {
  describe('the service image (required here)', () => {
    it('is named by POOL_CONTROLLER_IMAGE', () => {
      throw new Error(`image e2e cannot run (CI or POOL_K8S_REQUIRE=1): ${unavailable}`);
    });
  });
}

describe.runIf(IMAGE)('the service image, simulated source', () => {
  let container: ImageContainer;
  let base: string;

  beforeAll(async () => {
    container = ImageContainer.start(IMAGE!, ['--source', 'simulated']);
    base = await container.listening();
  });
  afterAll(async () => {
    await container?.remove();
  });

  it('runs as uid 1000 with no capabilities and no way to gain privileges', async () => {
    const identity = await container.identity();
    expect(identity.uid.split(/\s+/)).toEqual(['1000', '1000', '1000', '1000']);
    expect(identity.gid.split(/\s+/)).toEqual(['1000', '1000', '1000', '1000']);
    expect(identity).toMatchObject({
      capEff: NO_CAPABILITIES,
      capPrm: NO_CAPABILITIES,
      capBnd: NO_CAPABILITIES,
      noNewPrivs: '1',
    });
  });

  it('has a read-only root filesystem and a writable /tmp', async () => {
    const attempt = (path: string): string =>
      `try { require('fs').writeFileSync(${JSON.stringify(path)}, 'x'); console.log('written') } catch (e) { console.log(e.code) }`;
    expect(await container.node(attempt('/app/probe'))).toBe('EROFS');
    expect(await container.node(attempt('/tmp/probe'))).toBe('written');
  });

  it('answers /healthz, /readyz and the simulated cells', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await waitFor('readiness', () => ok(`${base}/readyz`));
    const body = await waitFor('the simulated cells', async () => {
      const answer = (await (await fetch(`${base}/api/v1/cells`)).json()) as {
        source: string;
        cells: Cell[];
      };
      return answer.cells.length > 0 ? answer : undefined;
    });
    expect(body.source).toBe('simulated');
  });

  it('reports its build: the package version, the revision it was built from, Node 24', async () => {
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const line = metrics.split('\n').find((l) => l.startsWith('pool_controller_build_info{'));
    expect(line).toMatch(
      new RegExp(
        `^pool_controller_build_info\\{version="${PACKAGE_VERSION}",revision="[0-9a-f]{12}",node_version="v24\\.[0-9.]+"\\} 1$`,
      ),
    );
  });

  it('exits 0 on SIGTERM', async () => {
    expect(await container.terminate()).toBe(0);
    expect(container.logs()).toContain('"msg":"stopped"');
  });
});

describe.runIf(IMAGE)('the service image against a real apiserver', () => {
  let env: KubeEnvironment;
  let core: CoreV1Api;
  let kubelet: FakeKubelet;
  let namespace: string;
  let container: ImageContainer;
  let base: string;

  const cells = async (): Promise<Cell[]> =>
    ((await (await fetch(`${base}/api/v1/cells`)).json()) as { cells: Cell[] }).cells;

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    core = env.kubeConfig.makeApiClient(CoreV1Api);
    kubelet = new FakeKubelet(env.kubeConfig);
    await kubelet.registerNode();
    namespace = await env.createNamespace('pool-image');
    await bindShippedRoles(env, namespace, [ROLE, LEADER_ELECTION_ROLE]);
    for (const worker of [0, 1]) {
      await core.createNamespacedPod({ namespace, body: lwsPod('engine', 0, worker, 2) });
      await kubelet.markRunning(namespace, worker === 0 ? 'engine-0' : 'engine-0-1');
    }

    // The container's user (1000) reads the kubeconfig; the environment writes it for root only.
    const kubeconfig = join(env.stateDir, 'kubeconfig-image.json');
    copyFileSync(env.unprivileged.kubeconfigPath, kubeconfig);
    chmodSync(kubeconfig, 0o644);
    container = ImageContainer.start(
      IMAGE!,
      ['--source', 'kubernetes', '--kubeconfig', KUBECONFIG_IN_CONTAINER, '--namespace', namespace],
      [[kubeconfig, KUBECONFIG_IN_CONTAINER]],
    );
    base = await container.listening();
  });
  afterAll(async () => {
    await container?.remove();
    await env?.stop();
  });

  it('lists the pods and watches', async () => {
    await waitFor('readiness', () => ok(`${base}/readyz`), 60_000);
    const reflector = (await (await fetch(`${base}/api/v1/reflector`)).json()) as Record<
      string,
      unknown
    >;
    expect(reflector).toMatchObject({ source: 'kubernetes', phase: 'watching', healthy: true });
    expect((await cells()).map((c) => [c.id, c.alive])).toEqual([['engine-00000', true]]);
  });

  it('sees a pod created after the list, through the watch', async () => {
    await core.createNamespacedPod({ namespace, body: lwsPod('engine', 1, 0, 1) });
    await kubelet.markRunning(namespace, 'engine-1');
    const seen = await waitFor('the new cell', async () => {
      const now = await cells();
      return now.some((c) => c.id === 'engine-00001' && c.alive) ? now : undefined;
    });
    expect(seen.map((c) => c.id)).toEqual(['engine-00000', 'engine-00001']);
  });

  it('exits 0 on SIGTERM and logs nothing of the kubeconfig', async () => {
    expect(await container.terminate()).toBe(0);
    expect(container.logs()).not.toContain(env.unprivileged.token);
  });
});
