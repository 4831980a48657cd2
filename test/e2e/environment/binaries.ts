/**
 * Where the e2e binaries (kube-apiserver, etcd) live and how they get there.
 *
 * The versions come from go.mod beside this file, the build recipe, so there is one place that
 * pins them. Binaries are cached outside the repository keyed by version, and a cached binary is
 * trusted only if it was built from the current go.mod/go.sum (recipe.sha256), the same rule
 * build.sh applies, so bumping a pin can never run a stale binary.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of the Go build recipe (go.mod, go.sum, build.sh): this file's folder, or, when this
 * module runs compiled from `dist/` (the soak script, bench/soak.ts), the source folder it was
 * compiled from.
 */
export const recipeDir = sourceFolder(dirname(fileURLToPath(import.meta.url)));

function sourceFolder(here: string): string {
  if (existsSync(join(here, 'go.mod'))) return here;
  const marker = `${sep}dist${sep}test${sep}`;
  const at = here.lastIndexOf(marker);
  return at === -1 ? here : `${here.slice(0, at)}${sep}test${sep}${here.slice(at + marker.length)}`;
}

export interface KubeBinaries {
  readonly kubeApiserver: string;
  readonly etcd: string;
  readonly kubernetesVersion: string;
  readonly etcdVersion: string;
}

/** `POOL_K8S_CACHE` overrides the cache root, e.g. to measure a cold build. */
export function cacheRoot(): string {
  const explicit = process.env.POOL_K8S_CACHE;
  if (explicit) return explicit;
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg || join(homedir(), '.cache'), 'pool-controller');
}

function pinnedVersion(goMod: string, module: string): string {
  for (const line of goMod.split('\n')) {
    const [name, version] = line.trim().split(/\s+/);
    if (name === module && version?.startsWith('v')) return version;
  }
  throw new Error(`e2e: ${join(recipeDir, 'go.mod')} pins no version of ${module}`);
}

/** Paths the binaries have (or will have, once built) for the pinned versions. */
export function pinnedBinaries(): KubeBinaries {
  const goMod = readFileSync(join(recipeDir, 'go.mod'), 'utf8');
  const kubernetesVersion = pinnedVersion(goMod, 'k8s.io/kubernetes');
  const etcdVersion = pinnedVersion(goMod, 'go.etcd.io/etcd/server/v3');
  const root = cacheRoot();
  return {
    kubeApiserver: join(root, 'k8s', kubernetesVersion, 'kube-apiserver'),
    etcd: join(root, 'etcd', etcdVersion, 'etcd'),
    kubernetesVersion,
    etcdVersion,
  };
}

function recipeHash(): string {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(recipeDir, 'go.mod')));
  hash.update(readFileSync(join(recipeDir, 'go.sum')));
  return hash.digest('hex');
}

function isCurrent(binary: string, recipe: string): boolean {
  try {
    accessSync(binary, constants.X_OK);
    return readFileSync(join(dirname(binary), 'recipe.sha256'), 'utf8').trim() === recipe;
  } catch {
    return false;
  }
}

/** True when both binaries are cached and built from the current recipe. */
export function binariesCached(): boolean {
  const binaries = pinnedBinaries();
  const recipe = recipeHash();
  return isCurrent(binaries.kubeApiserver, recipe) && isCurrent(binaries.etcd, recipe);
}

/** True when a `go` command runs; it is what builds missing binaries. */
export function goToolchainPresent(): boolean {
  const result = spawnSync('go', ['version'], { stdio: 'ignore' });
  return result.status === 0;
}

/**
 * CI and `POOL_K8S_REQUIRE=1` turn a missing toolchain into a failure: there, a skipped e2e suite
 * would be a green run that proved nothing.
 */
export function kubeEnvironmentRequired(): boolean {
  return Boolean(process.env.CI) || process.env.POOL_K8S_REQUIRE === '1';
}

/**
 * Why the e2e suite cannot run here, or undefined if it can (binaries cached, or Go present to
 * build them).
 */
export function kubeEnvironmentUnavailableReason(): string | undefined {
  if (binariesCached() || goToolchainPresent()) return undefined;
  const { kubernetesVersion, etcdVersion } = pinnedBinaries();
  return (
    `no Go toolchain to build kube-apiserver ${kubernetesVersion} and etcd ${etcdVersion} ` +
    `(none cached in ${cacheRoot()}); install Go >= 1.26`
  );
}

/**
 * Builds whatever is missing (build.sh, output shown as it happens) and returns the binaries.
 * Cheap when both are cached; throws naming the failed step otherwise.
 */
export function ensureKubeBinaries(): KubeBinaries {
  const binaries = pinnedBinaries();
  if (binariesCached()) return binaries;
  const script = join(recipeDir, 'build.sh');
  if (!existsSync(script)) throw new Error(`e2e: build script ${script} is missing`);
  const result = spawnSync('bash', [script], { stdio: 'inherit' });
  if (result.status !== 0) {
    throw new Error(
      `e2e: building kube-apiserver/etcd failed (exit ${result.status ?? result.signal}); ` +
        'the line "e2e build: FAILED at step: ..." above names the step',
    );
  }
  if (!binariesCached()) {
    throw new Error(
      `e2e: build.sh succeeded but ${binaries.kubeApiserver} or ${binaries.etcd} is missing`,
    );
  }
  return binaries;
}
