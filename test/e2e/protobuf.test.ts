/**
 * Protobuf against a real kube-apiserver: the pod LIST and WATCH decoded from protobuf give exactly
 * what the JSON encoding gives, field for field, for pods that use every field ./pod.ts reads
 * (ports, selectors, gates, conditions, container states with negative exit codes, deletion
 * timestamps, non-ASCII annotations), across pages, watch events and errors.
 */
import https from 'node:https';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiStatusError } from '../../src/kubernetes/client/api-errors.js';
import { loadApiConnection } from '../../src/kubernetes/client/connection.js';
import {
  decodeProtobufPodList,
  PROTOBUF_CONTENT_TYPE,
} from '../../src/kubernetes/codec/pod-protobuf.js';
import { type FrameReading, readFrame } from '../../src/kubernetes/codec/watch-frame-parser.js';
import { HttpPodApi } from '../../src/kubernetes/resources/http-pod-api.js';
import type { PodList } from '../../src/kubernetes/resources/pod-api.js';
import { podKey } from '../../src/model/pod.js';
import { decodedEvent, decodedPod } from '../support/decoded-pods.js';
import { FakeKubelet, onNode } from './environment/index.js';
import { managed, podManifest, useReflectorSuite, waitUntil } from './support-reflector.js';

const ANNOTATION = 'e2e/note';
const LONG_NOTE = 'ein Wert mit Umlauten äöü und ✓, länger als zweiunddreißig Bytes';

/** Pods as JSON (schema-validated, then written), and from protobuf (transcoded into JSON). */
async function apis(kubeconfigPath: string): Promise<{
  json: HttpPodApi;
  protobuf: HttpPodApi;
}> {
  const connection = await loadApiConnection({ kubeconfigPath });
  return {
    json: new HttpPodApi(connection, 'json'),
    protobuf: new HttpPodApi(connection, 'protobuf'),
  };
}

/** A reading with its pod parsed back, as the main thread reads it. */
function readable(reading: FrameReading): unknown {
  return reading.kind === 'change' ? { ...reading, event: decodedEvent(reading.event) } : reading;
}

async function list(
  api: HttpPodApi,
  namespace: string,
  limit: number,
): Promise<PodList & { bytes: number }> {
  let bytes = 0;
  const result = await api.listPods({
    namespace,
    limit,
    signal: AbortSignal.timeout(20_000),
    onBytes: (count) => {
      bytes += count;
    },
  });
  return { ...result, bytes };
}

/** Frames of one watch from `resourceVersion`, read until `enough` says stop (or 20 s). */
async function watch(
  api: HttpPodApi,
  namespace: string,
  resourceVersion: string,
  enough: (readings: FrameReading[]) => boolean,
  timeoutSeconds = 30,
): Promise<FrameReading[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('watch read timed out')), 20_000);
  const readings: FrameReading[] = [];
  try {
    const stream = await api.watchPods({
      namespace,
      resourceVersion,
      timeoutSeconds,
      signal: controller.signal,
    });
    for await (const frame of stream) {
      readings.push(readFrame(frame));
      if (enough(readings)) break;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return readings;
}

const changes = (readings: FrameReading[]) => readings.filter((r) => r.kind === 'change');

describe('protobuf pod LIST and WATCH on a real apiserver', () => {
  const suite = useReflectorSuite({ watchCache: true }, 'protobuf');

  it('lists the same pods, page by page, as JSON does, in fewer bytes', async () => {
    const { namespace, pods } = await suite.setUp();
    const kubelet = new FakeKubelet(suite.env.kubeConfig);
    await kubelet.registerNode();
    const rich = onNode(podManifest('rich-0', managed('rich')));
    rich.metadata = { ...rich.metadata, annotations: { [ANNOTATION]: LONG_NOTE, short: 'ü' } };
    rich.spec = {
      ...rich.spec!,
      subdomain: 'engines',
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      containers: [
        {
          name: 'engine',
          image: 'registry.invalid/e2e:1',
          ports: [{ name: 'http', containerPort: 30000, protocol: 'TCP' }, { containerPort: 9090 }],
        },
        { name: 'sidecar', image: 'registry.invalid/e2e:1' },
      ],
    };
    await pods.createPod(rich);
    await kubelet.markRunning(namespace, 'rich-0');
    await kubelet.restartContainer(namespace, 'rich-0');

    const gated = podManifest('gated-0', managed('gated'));
    gated.spec = { ...gated.spec!, schedulingGates: [{ name: 'example.com/wait' }] };
    await pods.createPod(gated);

    await pods.createPod(onNode(podManifest('failed-0', managed('failed'))));
    await kubelet.markRunning(namespace, 'failed-0');
    await kubelet.markTerminated(namespace, 'failed-0', 'Failed');
    // A negative exit code: ten bytes on the protobuf wire.
    const failed = await pods.core.readNamespacedPod({ namespace, name: 'failed-0' });
    const terminated = failed.status?.containerStatuses?.[0]?.state?.terminated;
    if (!terminated) throw new Error('markTerminated left no terminated state');
    terminated.exitCode = -1;
    terminated.message = '';
    await pods.core.replaceNamespacedPodStatus({ namespace, name: 'failed-0', body: failed });

    const finalized = onNode(podManifest('finalized-0', managed('finalized')));
    finalized.metadata = { ...finalized.metadata, finalizers: ['e2e/hold'] };
    await pods.createPod(finalized);
    await pods.delete('finalized-0');
    for (const name of ['plain-0', 'plain-1', 'plain-2']) await pods.create(name, managed('plain'));

    const { json, protobuf } = await apis(suite.env.kubeconfigPath);
    const fromJson = await list(json, namespace, 2);
    const fromProtobuf = await list(protobuf, namespace, 2);
    expect(fromJson.pods).toHaveLength(7);
    // Transcoded straight into the hop's JSON, the main thread parses the very same pods.
    const parsedFromProtobuf = fromProtobuf.pods.map(decodedPod);
    expect(parsedFromProtobuf).toStrictEqual(fromJson.pods.map(decodedPod));
    expect(fromProtobuf.pods.map(podKey)).toEqual(
      fromJson.pods.map((pod) => `${namespace}/${pod.metadata.name}`),
    );
    expect(fromProtobuf.resourceVersion).toBe(fromJson.resourceVersion);
    expect(fromProtobuf.bytes).toBeLessThan(fromJson.bytes);

    const byName = new Map(parsedFromProtobuf.map((pod) => [pod.metadata.name, pod]));
    expect(byName.get('rich-0')?.metadata.annotations).toEqual({
      [ANNOTATION]: LONG_NOTE,
      short: 'ü',
    });
    expect(byName.get('rich-0')?.status.containerStatuses[0]?.lastState?.terminated?.exitCode).toBe(
      1,
    );
    expect(byName.get('failed-0')?.status.containerStatuses[0]?.state?.terminated?.exitCode).toBe(
      -1,
    );
    expect(byName.get('finalized-0')?.metadata.deletionTimestamp).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
    expect(byName.get('gated-0')?.spec.schedulingGates).toEqual([{ name: 'example.com/wait' }]);

    // The server really answered in protobuf: a raw request with the same Accept header.
    const raw = await rawGet(
      suite.env.server,
      suite.env.token,
      suite.env.caPath,
      `/api/v1/namespaces/${namespace}/pods?limit=2`,
    );
    expect(raw.contentType).toBe(PROTOBUF_CONTENT_TYPE);
    expect(decodeProtobufPodList(raw.body).pods).toHaveLength(2);

    await pods.core.patchNamespacedPod(
      { namespace, name: 'finalized-0', body: { metadata: { finalizers: null } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  });

  it('watches the same events as JSON does', async () => {
    const { namespace, pods } = await suite.setUp();
    const kubelet = new FakeKubelet(suite.env.kubeConfig);
    await kubelet.registerNode();
    await pods.createPod(onNode(podManifest('w-0', managed('w'))));
    const { json, protobuf } = await apis(suite.env.kubeconfigPath);
    const start = await list(json, namespace, 0);

    await pods.create('w-1', managed('w'));
    await kubelet.markRunning(namespace, 'w-0');
    await pods.patchLabels('w-1', { 'e2e/cell': 'moved' });
    await pods.delete('w-1');
    const enough = (readings: FrameReading[]) =>
      changes(readings).some((r) => r.type === 'DELETED');
    const [fromJson, fromProtobuf] = await Promise.all([
      watch(json, namespace, start.resourceVersion, enough),
      watch(protobuf, namespace, start.resourceVersion, enough),
    ]);
    const types = changes(fromJson).map((r) => r.type);
    expect(types[0]).toBe('ADDED');
    expect(types.at(-1)).toBe('DELETED');
    expect(types.length).toBeGreaterThanOrEqual(4);
    // Transcoded, each event's pod parses to the same pod, at the same key and version.
    expect(changes(fromProtobuf).map(readable)).toStrictEqual(changes(fromJson).map(readable));

    // Bookmarks on protobuf: reflector.test.ts ("advances the cursor on a bookmark") runs the
    // worker-backed source, which asks for protobuf by default.
    // Error frames on protobuf: a real in-stream 410 in reflector-faults.test.ts (watch cache off).
  });

  it('reports a refused LIST with the same Status in both encodings', async () => {
    const { namespace } = await suite.setUp();
    const { json, protobuf } = await apis(suite.env.kubeconfigPath);
    const refusal = async (api: HttpPodApi) => {
      try {
        await api.listPods({
          namespace,
          labelSelector: 'a in (',
          signal: AbortSignal.timeout(20_000),
        });
      } catch (error) {
        if (error instanceof ApiStatusError) return error.status;
        throw error;
      }
      throw new Error('the LIST was not refused');
    };
    const [fromJson, fromProtobuf] = await Promise.all([refusal(json), refusal(protobuf)]);
    expect(fromJson.code).toBe(400);
    expect(fromJson.reason).toBe('BadRequest');
    expect(fromProtobuf).toEqual(fromJson);
  });

  it('still tracks pods end to end through the worker-backed source on protobuf', async () => {
    const { namespace, pods } = await suite.setUp();
    await pods.create('e-0', managed('e'));
    const watched = await suite.startLoop(namespace);
    await pods.create('e-1', managed('e'));
    await watched.waitForMembership({ e: ['e-0', 'e-1'] });
    await pods.delete('e-0');
    await waitUntil('e-0 is gone', () => watched.membership().e?.length === 1);
  });
});

async function rawGet(
  server: string,
  token: string,
  caPath: string,
  path: string,
): Promise<{ contentType: string | undefined; body: Buffer }> {
  const { readFileSync } = await import('node:fs');
  return new Promise((resolve, reject) => {
    const request = https.request(
      new URL(path, server),
      {
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: `${PROTOBUF_CONTENT_TYPE}, application/json`,
        },
        ca: readFileSync(caPath),
        timeout: 20_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ contentType: response.headers['content-type'], body: Buffer.concat(chunks) }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}
