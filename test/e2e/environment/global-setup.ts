/**
 * Vitest global setup for the e2e suite: builds kube-apiserver and etcd once, before any test file
 * starts, so the build's progress shows up front and no file's beforeAll has to absorb it.
 * (vitest.e2e.config.ts has already decided whether the suite runs at all.)
 */
import { ensureKubeBinaries } from './binaries.js';

export default function setup(): void {
  const started = Date.now();
  const binaries = ensureKubeBinaries();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `e2e: kube-apiserver ${binaries.kubernetesVersion} and etcd ${binaries.etcdVersion} ready ` +
      `(${seconds}s): ${binaries.kubeApiserver}, ${binaries.etcd}`,
  );
}
