// `npm run pack:runtime` (after a build): assembles the `@pool-controller/runtime` package, the
// controller runtime and the Kubernetes pod source without the HTTP service, from this build's
// own dist/ (the same compiled files `pool-controller` ships), then packs it with `npm pack`.
//
// Why a second package rather than a workspace: the runtime is the same code either way, and the
// service imports it by relative path like any other folder of src/. Assembling it from dist/
// keeps one source tree, one build and one test suite, while a project that only wants a
// ReconcileLoop installs one package with no dependencies instead of the service's eighty.
//
// What goes in is found, not listed: every file the two entries (dist/src/runtime/index.js, and
// dist/src/kubernetes/pods.js) reach through relative imports, in JavaScript and in the `.d.ts`
// files (type-only modules vanish from the JavaScript), plus the reflector's worker bundle and the
// vendored KubeConfig loader, which the pod source loads by path. Any import of a package that is
// not a Node builtin or one of the pod source's two optional peers (piscina, zod) fails the
// script: that is what keeps the runtime free of the service's dependencies.
//
// Usage: node scripts/pack-runtime.mjs [--out DIR] [--pack DEST]
//   --out DIR    where the package folder is assembled (default dist/runtime-package)
//   --pack DEST  also run `npm pack` into DEST and print its JSON report
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

/** The package's name: scoped, so it reads as the runtime of `pool-controller`. */
const NAME = '@pool-controller/runtime';
/** Entry points, as the `exports` map names them, and the compiled module each one is. */
const ENTRIES = { '.': 'src/runtime/index', './pods': 'src/kubernetes/pods' };
/** Loaded by path at run time, not imported: the worker thread's script and the KubeConfig loader. */
const LOADED_BY_PATH = ['workers/reflector.worker.cjs', 'vendor/client-node-kubeconfig.cjs'];
/** The only packages the shipped files may import: the pod source's, so optional peers. */
const OPTIONAL_PEERS = ['piscina', 'zod'];
/**
 * Named by a dynamic import that never runs from a build: connection.js imports client-node only
 * when dist/vendor/client-node-kubeconfig.cjs is absent (under the test runner), and the vendored
 * file ships in this package.
 */
const FALLBACK_ONLY = ['@kubernetes/client-node'];

const { values } = parseArgs({
  options: { out: { type: 'string' }, pack: { type: 'string' } },
});
const out = resolve(values.out ?? join(dist, 'runtime-package'));

const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const entry of Object.values(ENTRIES)) {
  if (!existsSync(join(dist, `${entry}.js`))) {
    throw new Error(`pack-runtime: dist/${entry}.js is missing: run "npm run build" first`);
  }
}

const IMPORT =
  /(?:^|[;\s])(?:import|export)\s*(?:type\s+)?(?:[\w*{}\s,$]+from\s*)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|\brequire\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * Every import specifier of a compiled file, `require` calls included (the worker's bundle is
 * CommonJS); a regular expression suffices for tsc's and esbuild's output.
 */
function specifiers(file) {
  return [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3]);
}

/** The package a bare specifier names (`zod/mini` → `zod`, `@scope/x/y` → `@scope/x`). */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const files = new Set();
const problems = [];
function checkBare(file, specifier) {
  // `isBuiltin`, not `builtinModules`: Node 22 leaves the builtins loadable only with the `node:`
  // prefix (`node:sqlite`, which client-node's bundle requires) out of that list.
  if (isBuiltin(specifier) || OPTIONAL_PEERS.includes(packageOf(specifier))) return;
  if (FALLBACK_ONLY.includes(specifier)) return;
  problems.push(`${relative(root, file)} imports ${specifier}`);
}

/** Adds `file` and, for a module of the tsc build, everything it imports relatively. */
function walk(file) {
  if (files.has(file)) return;
  if (!existsSync(file)) throw new Error(`pack-runtime: ${relative(root, file)} is missing`);
  files.add(file);
  for (const specifier of specifiers(file)) {
    if (!specifier.startsWith('.')) {
      checkBare(file, specifier);
      continue;
    }
    const target = resolve(dirname(file), specifier);
    walk(file.endsWith('.d.ts') ? target.replace(/\.js$/, '.d.ts') : target);
  }
}

for (const entry of Object.values(ENTRIES)) {
  walk(join(dist, `${entry}.js`));
  walk(join(dist, `${entry}.d.ts`));
}
for (const file of [...files].filter((f) => f.endsWith('.js'))) {
  const types = file.replace(/\.js$/, '.d.ts');
  if (existsSync(types)) walk(types);
}
for (const path of LOADED_BY_PATH) {
  // Bundles: leaves, whose bare imports are checked like any other.
  const file = join(dist, path);
  if (!existsSync(file)) throw new Error(`pack-runtime: dist/${path} is missing`);
  files.add(file);
  for (const specifier of specifiers(file))
    if (!specifier.startsWith('.')) checkBare(file, specifier);
}
if (problems.length > 0) {
  throw new Error(
    `pack-runtime: the runtime package may import only Node builtins and ${OPTIONAL_PEERS.join(', ')}:\n  ${problems.join('\n  ')}`,
  );
}

rmSync(out, { recursive: true, force: true });
for (const file of files) {
  const target = join(out, 'dist', relative(dist, file));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(file, target);
}
copyFileSync(join(root, 'LICENSE'), join(out, 'LICENSE'));

const peerRange = (name) => `^${manifest.dependencies[name].replace(/^[\^~]/, '')}`;
const runtimeManifest = {
  name: NAME,
  version: manifest.version,
  description:
    'The controller runtime of pool-controller (store, queue, retries, stream driver, ReconcileLoop) and its Kubernetes pod source, without the HTTP service',
  type: 'module',
  license: manifest.license,
  engines: manifest.engines,
  exports: Object.fromEntries(
    Object.entries(ENTRIES).map(([name, entry]) => [
      name,
      { types: `./dist/${entry}.d.ts`, default: `./dist/${entry}.js` },
    ]),
  ),
  files: ['dist'],
  peerDependencies: Object.fromEntries(OPTIONAL_PEERS.map((name) => [name, peerRange(name)])),
  peerDependenciesMeta: Object.fromEntries(
    OPTIONAL_PEERS.map((name) => [name, { optional: true }]),
  ),
};
writeFileSync(join(out, 'package.json'), `${JSON.stringify(runtimeManifest, null, 2)}\n`);
writeFileSync(
  join(out, 'README.md'),
  `# ${NAME}

The controller runtime of [pool-controller](https://www.npmjs.com/package/pool-controller):
\`ReconcileLoop\`, \`ObjectStore\`, \`WorkQueue\`, \`RetryScheduler\`, \`SourceStreamDriver\`,
\`Clock\`, with no dependencies. It is the same code as \`pool-controller/runtime\`, without
the HTTP service's dependencies; see pool-controller's docs/library.md for a guide.

\`\`\`js
import { ReconcileLoop } from '${NAME}';
\`\`\`

\`${NAME}/pods\` adds \`WorkerPodSource\`, the Kubernetes pod source (a reflector in a worker
thread). It needs two more packages, its optional peers: \`npm install ${OPTIONAL_PEERS.map((name) => `${name}@${peerRange(name)}`).join(' ')}\`.
`,
);

const summary = { out: relative(root, out) || '.', files: files.size + 3 };
if (values.pack) {
  const destination = resolve(values.pack);
  mkdirSync(destination, { recursive: true });
  const report = execFileSync(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', destination],
    { cwd: out, encoding: 'utf8' },
  );
  summary.pack = JSON.parse(report)[0];
  delete summary.pack.files;
}
console.log(JSON.stringify(summary, null, 2));
