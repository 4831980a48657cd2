import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  reflectorWorkerUrl,
  requireReflectorWorker,
} from '../../src/kubernetes/reflector-worker/script-path.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { rawPod } from '../support/pods.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));

describe('reflectorWorkerUrl', () => {
  it('points TypeScript source (the test runner) at the compiled worker in dist/', () => {
    expect(
      reflectorWorkerUrl('file:///app/src/kubernetes/reflector-worker/script-path.ts').href,
    ).toBe('file:///app/dist/workers/reflector.worker.cjs');
  });

  it('points compiled code at the worker beside it in dist/', () => {
    expect(
      reflectorWorkerUrl('file:///app/dist/src/kubernetes/reflector-worker/script-path.js').href,
    ).toBe('file:///app/dist/workers/reflector.worker.cjs');
  });

  it('finds the built worker from here', () => {
    expect(fileURLToPath(reflectorWorkerUrl())).toBe(
      join(root, 'dist/workers/reflector.worker.cjs'),
    );
    expect(existsSync(requireReflectorWorker())).toBe(true);
  });

  it('says how to build the worker when it is missing', () => {
    expect(() => requireReflectorWorker(new URL('file:///nowhere/reflector.worker.cjs'))).toThrow(
      'run "npm run build"',
    );
  });
});

describe('the worker in plain Node', () => {
  it('starts from compiled JS and streams a LIST', async () => {
    const server = await FakeApiServer.start();
    try {
      server.pods = [rawPod({ name: 'a' }), rawPod({ name: 'b' })];
      const dir = mkdtempSync(join(tmpdir(), 'pool-controller-plain-node-'));
      const script = join(dir, 'probe.mjs');
      const entry = pathToFileURL(
        join(root, 'dist/src/kubernetes/reflector-worker/main-thread-source.js'),
      ).href;
      writeFileSync(
        script,
        `import { WorkerPodSource } from ${JSON.stringify(entry)};
const source = new WorkerPodSource({ kubeconfigPath: ${JSON.stringify(server.writeKubeconfig())} });
const iterator = source.source()[Symbol.asyncIterator]();
const first = await iterator.next();
console.log(JSON.stringify({ type: first.value.type, keys: [...first.value.objects.keys()] }));
await iterator.return();
await source.close();
`,
      );
      const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 30_000 });
      expect(JSON.parse(stdout)).toEqual({ type: 'replace', keys: ['default/a', 'default/b'] });
    } finally {
      await server.close();
    }
  });
});
