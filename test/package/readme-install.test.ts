/**
 * The README's install block, followed literally (test/support/readme-install.ts): it builds one
 * image reference, pushes or loads exactly that, and points the kustomize overlay and the Helm
 * values at it. test/e2e/helm.test.ts renders the chart with the block's own Helm arguments.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type InstallRun, runReadmeInstall, STUB_REVISION } from '../support/readme-install.js';

// biome-ignore lint/suspicious/noExplicitAny: manifests are untyped YAML documents
type Any = any;

describe("the README's install block", () => {
  let run: InstallRun;
  const calls = (tool: string) => run.calls.filter((c) => c.tool === tool);

  beforeAll(() => {
    run = runReadmeInstall();
  });
  afterAll(() => {
    if (run) rmSync(run.dir, { recursive: true, force: true });
  });

  it('starts from building the image, tagged with the checkout, and pushes that reference', () => {
    expect(run.tag).toBe(`0.1.0-${STUB_REVISION.slice(0, 12)}`);
    const [build, push] = calls('docker');
    expect(build?.args).toEqual([
      'build',
      '--build-arg',
      `POOL_CONTROLLER_REVISION=${STUB_REVISION}`,
      '-t',
      run.reference,
      '.',
    ]);
    expect(push?.args).toEqual(['push', run.reference]);
  });

  it('builds the same reference without Docker, and pushes or loads it into kind', () => {
    expect(calls('image.sh')).toEqual([
      { tool: 'image.sh', args: ['build'], poolControllerImage: run.reference },
    ]);
    expect(calls('podman').map((c) => c.args)).toEqual([
      ['push', run.reference],
      ['save', '-o', 'pool-controller.tar', run.reference],
    ]);
    expect(calls('kind').map((c) => c.args)).toEqual([
      ['load', 'image-archive', 'pool-controller.tar'],
    ]);
  });

  it('applies an overlay of deploy/ whose images entry turns the Deployment image into that reference', () => {
    const overlay = parse(
      readFileSync(join(run.dir, 'pool-controller-install/kustomization.yaml'), 'utf8'),
    ) as Any;
    expect(overlay.resources).toEqual(['../deploy']);
    const deployment = parse(readFileSync(join(run.dir, 'deploy/deployment.yaml'), 'utf8')) as Any;
    const image: string = deployment.spec.template.spec.containers[0].image;
    // kustomize's images transformer: the entry whose name is the container's image replaces it.
    const entry = overlay.images.find((i: Any) => i.name === image);
    expect(`${entry.newName}:${entry.newTag}`).toBe(run.reference);
    expect(calls('kubectl').map((c) => c.args)).toEqual([
      ['create', 'namespace', 'pool-system'],
      ['-n', 'pool-system', 'apply', '-k', 'pool-controller-install/'],
      ['-n', 'pool-system', 'port-forward', 'deploy/pool-controller', '8080'],
    ]);
  });

  it('installs the chart with image.repository and image.tag set to that reference', () => {
    const [install] = calls('helm');
    expect(install?.args.slice(0, 4)).toEqual(['-n', 'pool-system', 'install', 'pool-controller']);
    const sets = install!.args.flatMap((a, i) => (install!.args[i - 1] === '--set' ? [a] : []));
    expect(sets).toEqual([`image.repository=${run.image}`, `image.tag=${run.tag}`]);
  });
});
