/**
 * What this process is: the package version, the source revision it was built from and the Node.js
 * that runs it — printed by `--version`, exported as `pool_controller_build_info` (Prometheus'
 * `*_build_info` convention: value 1, the facts as labels), and shown on the status page, so an
 * operator can tell which build answers without shelling into the pod.
 *
 * The version is package.json's: it ships in the npm package and is copied into the image, and the
 * repository has it. The revision is written at build time (scripts/write-build-info.mjs, part of
 * `npm run build`) into dist/build-info.json, from POOL_CONTROLLER_REVISION or `git rev-parse`;
 * the sources run by the test runner, or a build made without either, say `unknown`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The facts, as strings: they become metric labels and page text. */
export interface BuildInfo {
  /** package.json's `version`. */
  readonly version: string;
  /** The source revision (a commit, 12 hex digits from git) or `unknown`. */
  readonly revision: string;
  /** `process.version`, e.g. `v24.22.3`. */
  readonly nodeVersion: string;
}

/** What a fact that cannot be read is reported as, rather than failing the start. */
export const UNKNOWN_BUILD_FACT = 'unknown';

/** The package's own name, to tell its package.json from a consumer's further up the tree. */
const PACKAGE_NAME = 'pool-controller';

/**
 * How many folders up from this file package.json may be: src/service/ (sources) is two, and
 * dist/src/service/ (a build, the package, the image) three.
 */
const MAX_PACKAGE_DEPTH = 3;

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return value !== null && typeof value === 'object'
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The package root: the nearest folder up whose package.json is this package's. */
function packageRoot(from: string): string | undefined {
  let dir = from;
  for (let depth = 0; depth <= MAX_PACKAGE_DEPTH; depth += 1) {
    dir = dirname(dir);
    if (readJson(join(dir, 'package.json'))?.name === PACKAGE_NAME) return dir;
  }
  return undefined;
}

function stringField(record: Record<string, unknown> | undefined, key: string): string {
  const value = record?.[key];
  return typeof value === 'string' && value !== '' ? value : UNKNOWN_BUILD_FACT;
}

/** Reads the build facts of the package that `moduleUrl` belongs to (`import.meta.url`). */
export function readBuildInfo(moduleUrl: string = import.meta.url): BuildInfo {
  const root = packageRoot(fileURLToPath(moduleUrl));
  return {
    version: stringField(root ? readJson(join(root, 'package.json')) : undefined, 'version'),
    revision: stringField(
      root ? readJson(join(root, 'dist', 'build-info.json')) : undefined,
      'revision',
    ),
    nodeVersion: process.version,
  };
}

let cached: BuildInfo | undefined;

/** This process's build facts, read once: they do not change while it runs. */
export function buildInfo(): BuildInfo {
  cached ??= readBuildInfo();
  return cached;
}

/** The `--version` line: `pool-controller 0.1.0 (revision 0123456789ab, node v24.22.3)`. */
export function versionLine(info: BuildInfo): string {
  return `${PACKAGE_NAME} ${info.version} (revision ${info.revision}, node ${info.nodeVersion})`;
}
