// Part of `npm run build`, after tsc: bundles the `pool-controller` command — tsc's
// dist/src/cli/service-command.js, every module of ours it imports and the npm packages they use
// (Fastify, zod, pino, prom-client, …) — into ES module chunks under dist/src/cli/service-bundle/,
// which the command's entry (src/main.ts) imports. tsc's modules stay as they are: the package's
// library entries, the tests and the other commands load them.
//
// Why: the command's start loads ~640 modules, and on this project's 2-core machine Node's loader
// (resolving, statting, reading and linking each one) was ~300 ms of the main thread's CPU before
// `/readyz`, while the reflector's thread decodes the first LIST and the API server serves it.
// Spawn → `/readyz` at 10,000 pods against a real API server, 9 alternated runs: 1,348 → 1,210 ms,
// process CPU to ready 1,650 → 1,470 ms (docs/performance.md).
//
// Split into chunks (esbuild's `splitting`): what the command imports only when it needs it
// (the assembly, the HTTP servers, each sink) stays a dynamic import of its own chunk, so the path
// to the first request to the API server loads no more than before. One bundle without splitting
// evaluated all of it first and was no faster.
//
// `import.meta.url`: every module that reads it (to find dist/vendor/, the worker's script, the
// status page's assets, package.json) gets, in the bundle, the URL its own file has in dist/, so it
// finds the same files. The reflector-threads module is not bundled: the entry imports it before
// the command to start the thread early, and the command must see that same module.
import { readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const entry = join(dist, 'src', 'cli', 'service-command.js');
/** src/main.ts imports `service-command.js` from here. */
const outdir = join(dist, 'src', 'cli', 'service-bundle');
/** Shared with the entry, which starts the thread before it imports the command. */
const SHARED_WITH_ENTRY = join(
  dist,
  'src',
  'kubernetes',
  'reflector-worker',
  'reflector-threads.js',
);

/** A specifier for `file` as seen from the bundle's chunks (all in `outdir`). */
function fromBundle(file) {
  const path = relative(outdir, file);
  return path.startsWith('.') ? path : `./${path}`;
}

const keepModuleUrls = {
  name: 'keep-module-urls',
  setup(builder) {
    builder.onResolve({ filter: /reflector-threads\.js$/ }, (args) => {
      const file = join(args.resolveDir, args.path);
      return file === SHARED_WITH_ENTRY ? { path: fromBundle(file), external: true } : undefined;
    });
    builder.onLoad({ filter: /\/dist\/(src|routes)\/.*\.js$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      return {
        contents: text.replaceAll(
          'import.meta.url',
          `new URL(${JSON.stringify(fromBundle(args.path))}, import.meta.url).href`,
        ),
        loader: 'js',
        resolveDir: dirname(args.path),
      };
    });
  },
};

await build({
  entryPoints: [entry],
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  outdir,
  sourcemap: 'linked',
  // Loaded by path or only off the command's path: piscina finds its worker script beside itself;
  // pino-pretty (a terminal's log format) and @fastify/swagger (the OpenAPI generator) are loaded
  // on demand; client-node is the vendor bundle's (src/kubernetes/client/connection.ts).
  external: [
    'piscina',
    'pino-pretty',
    '@kubernetes/client-node',
    '@fastify/swagger',
    '@fastify/swagger-ui',
  ],
  // The CommonJS packages inside (Fastify, pino, …) `require` Node's modules: through a real
  // `require`, which also keeps `node:http` out of Node's ES facade (src/kubernetes/client/node-http.ts).
  banner: {
    js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
  },
  plugins: [keepModuleUrls],
  legalComments: 'eof',
  logLevel: 'warning',
});
