// `npm start` and `npm install` (`prepare`, which npm also runs when it installs the package from
// git) build only when dist/ is not the build of what is checked out: a build takes seconds, the
// built service is ready in about one.
//
//   node scripts/build-if-stale.mjs           build (`npm run build`) unless dist/ is up to date
//   node scripts/build-if-stale.mjs --stamp   record that dist/ is the build of the inputs now
//                                             (the last step of `npm run build`)
//
// Up to date means dist/build-stamp.json holds the SHA-256 of every input of the build, path and
// content (mtimes change with every checkout, contents do not): the folders tsconfig.build.json
// compiles, the build scripts, the TypeScript configs, package.json and package-lock.json (a
// dependency bundled into dist/vendor), and the revision write-build-info.mjs records.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampFile = join(root, 'dist', 'build-stamp.json');

/** What the build reads: folders (walked) and single files, relative to the repository. */
const INPUT_FOLDERS = ['src', 'workers', 'routes', 'bench', 'examples'];
const INPUT_FILES = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build-if-stale.mjs',
  'scripts/bundle-client-node.mjs',
  'scripts/bundle-reflector-worker.mjs',
  'scripts/bundle-service.mjs',
  'scripts/bundle-status-page.mjs',
  'scripts/write-build-info.mjs',
];

function walk(folder) {
  const full = join(root, folder);
  if (!existsSync(full)) return [];
  const files = [];
  for (const entry of readdirSync(full, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) files.push(relative(root, join(entry.parentPath, entry.name)));
  }
  return files;
}

/** The revision the build records (write-build-info.mjs), so `--version` never names an older one. */
function revision() {
  const given = (process.env.POOL_CONTROLLER_REVISION ?? '').trim();
  if (given) return given;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    }).trim();
  } catch {
    return '';
  }
}

function inputsHash() {
  const hash = createHash('sha256');
  const files = [
    ...INPUT_FOLDERS.flatMap(walk),
    ...INPUT_FILES.filter((f) => existsSync(join(root, f))),
  ];
  for (const file of files.sort()) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(root, file)));
    hash.update('\0');
  }
  hash.update(`revision\0${revision()}`);
  return hash.digest('hex');
}

function recordedHash() {
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8')).inputs;
  } catch {
    return undefined;
  }
}

if (process.argv.includes('--stamp')) {
  writeFileSync(stampFile, `${JSON.stringify({ inputs: inputsHash() })}\n`);
} else if (recordedHash() === inputsHash()) {
  console.error('dist/ is up to date with the sources: not rebuilding (npm run build forces it)');
} else {
  const npm = process.env.npm_execpath;
  const result = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
