/**
 * The ValidatingAdmissionPolicy that docs/operations.md ("Threat model") gives operators, taken
 * from the page itself and run on a real kube-apiserver: only the StatefulSet controller creates
 * pods with LeaderWorkerSet labels, and nobody changes them afterwards. A policy that does not
 * compile, or lets an impersonating pod through, fails here rather than in a user's cluster.
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type KubeEnvironment, startKubeEnvironment } from './environment/index.js';

const STATEFULSET_CONTROLLER = 'system:serviceaccount:kube-system:statefulset-controller';
const LWS = 'leaderworkerset.sigs.k8s.io';
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';

interface Answer {
  status: number;
  body: string;
}

type Json = Record<string, unknown>;

/** The YAML block of the "Threat model" section of docs/operations.md, as objects. */
async function policyFromDocs(): Promise<Json[]> {
  const page = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const section = page.slice(page.indexOf('## Threat model'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/operations.md: no yaml block in "Threat model"');
  return parseAllDocuments(block).map((doc) => doc.toJSON() as Json);
}

function pod(name: string, labels: Record<string, string>, annotations = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels, annotations },
    spec: { containers: [{ name: 'engine', image: 'engine:1' }] },
  };
}

const LWS_LABELS = {
  [`${LWS}/name`]: 'engine',
  [`${LWS}/group-index`]: '0',
  [`${LWS}/worker-index`]: '0',
  [`${LWS}/template-revision-hash`]: 'r1',
};

describe('the LWS label admission policy of docs/operations.md, on a real API server', () => {
  let env: KubeEnvironment;
  let ca: Buffer;
  let namespace: string;
  let elsewhere: string;

  /** One call as the admin, or impersonating `as`; JSON bodies, a merge patch for PATCH. */
  const call = (method: string, path: string, body?: Json, as?: string): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        new URL(path, env.server),
        {
          method,
          ca,
          headers: {
            authorization: `Bearer ${env.token}`,
            accept: 'application/json',
            ...(body
              ? {
                  'content-type':
                    method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
                }
              : {}),
            ...(as ? { 'impersonate-user': as } : {}),
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
      req.end(body ? JSON.stringify(body) : undefined);
    });

  const createPod = (ns: string, body: Json, as?: string) =>
    call('POST', `/api/v1/namespaces/${ns}/pods`, body, as);
  const patchPod = (name: string, patch: Json) =>
    call('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}`, patch);

  beforeAll(async () => {
    env = await startKubeEnvironment({ watchCache: true });
    ca = await readFile(env.caPath);
    namespace = await env.createNamespace('lws-policy');
    elsewhere = await env.createNamespace('lws-free');
    const [policy, binding] = await policyFromDocs();
    expect(policy).toMatchObject({ kind: 'ValidatingAdmissionPolicy' });
    expect(binding).toMatchObject({ kind: 'ValidatingAdmissionPolicyBinding' });
    const bound = structuredClone(binding) as {
      spec: { matchResources: { namespaceSelector: { matchLabels: Record<string, string> } } };
    };
    bound.spec.matchResources.namespaceSelector.matchLabels['kubernetes.io/metadata.name'] =
      namespace;
    expect((await call('POST', `${ADMISSION}/validatingadmissionpolicies`, policy)).status).toBe(
      201,
    );
    expect(
      (await call('POST', `${ADMISSION}/validatingadmissionpolicybindings`, bound as Json)).status,
    ).toBe(201);
    // The API server picks a new policy up from its own informer: wait until it denies.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const probe = await createPod(namespace, pod('probe', LWS_LABELS));
      if (probe.status !== 201) break;
      await call('DELETE', `/api/v1/namespaces/${namespace}/pods/probe?gracePeriodSeconds=0`);
      if (Date.now() > deadline) throw new Error('the policy never took effect');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });

  afterAll(async () => {
    await env?.stop();
  });

  it('compiles: the API server reports no type-checking warnings for its expressions', async () => {
    const answer = await call('GET', `${ADMISSION}/validatingadmissionpolicies/lws-pod-labels`);
    const status = (JSON.parse(answer.body) as { status?: { typeChecking?: Json } }).status;
    expect(status?.typeChecking?.expressionWarnings ?? []).toEqual([]);
  });

  it('refuses a pod with LWS labels or the size annotation from anyone but the StatefulSet controller', async () => {
    const labelled = await createPod(namespace, pod('impostor', LWS_LABELS));
    expect(labelled.status).not.toBe(201);
    expect(labelled.body).toContain(
      'only the StatefulSet controller may create pods with LeaderWorkerSet labels',
    );
    const sized = await createPod(namespace, pod('sized', {}, { [`${LWS}/size`]: '999999999' }));
    expect(sized.status).not.toBe(201);
  });

  it('lets the StatefulSet controller create them, and anyone create other pods', async () => {
    expect(
      (await createPod(namespace, pod('engine-0', LWS_LABELS), STATEFULSET_CONTROLLER)).status,
    ).toBe(201);
    expect((await createPod(namespace, pod('plain', { app: 'other' }))).status).toBe(201);
    expect((await createPod(elsewhere, pod('unbound', LWS_LABELS))).status).toBe(201);
  });

  it('refuses a change to an LWS label or the size annotation, and allows every other change', async () => {
    const changed = await patchPod('engine-0', {
      metadata: { labels: { [`${LWS}/template-revision-hash`]: 'r2' } },
    });
    expect(changed.status).not.toBe(200);
    expect(changed.body).toContain(
      'LeaderWorkerSet labels and the size annotation of a pod cannot change',
    );
    const removed = await patchPod('engine-0', {
      metadata: { labels: { [`${LWS}/group-index`]: null } },
    });
    expect(removed.status).not.toBe(200);
    const sized = await patchPod('engine-0', {
      metadata: { annotations: { [`${LWS}/size`]: '2' } },
    });
    expect(sized.status).not.toBe(200);
    const joined = await patchPod('plain', {
      metadata: { labels: { [`${LWS}/name`]: 'engine' } },
    });
    expect(joined.status).not.toBe(200);
    expect(
      (await patchPod('engine-0', { metadata: { labels: { team: 'inference' } } })).status,
    ).toBe(200);
  });
});
