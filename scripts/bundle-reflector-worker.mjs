// Part of `npm run build`, after tsc: bundles the reflector's worker thread — tsc's
// dist/workers/reflector.worker.js and every module it imports, zod included — into one CommonJS
// file, dist/workers/reflector.worker.cjs, and removes tsc's entry (nothing loads it). client-node
// stays out (the worker loads dist/vendor/client-node-kubeconfig.cjs, itself one file, after its
// first sync: its first request goes out with credentials the main thread resolved).
//
// Why: a worker thread loads its modules before its first LIST, and as some forty small ES modules
// (resolved, read, compiled and linked one by one) the reflector's took 140–170 ms on this
// project's 2-core machine; as one file, 55–75 ms. That time is on the path from process start to
// the first request, so to readiness. The bundle is made from the same build on every build.
//
// Why CommonJS (`.cjs`, so the package's `"type": "module"` does not apply): piscina's worker
// script is CommonJS and `require`s the task file first; an ES module there starts Node's ESM
// loader in the thread, and `node:http` imported from an ES module also loads Node's internal
// undici. With this and the client-node bundle CommonJS, the thread spent 133 → 104 ms of CPU
// from its start to its first request (medians of 10, empty namespace, real API server); with
// only this one, 133 ms still, the client-node bundle's import starting the ESM loader instead.
//
// `import.meta.url` does not exist in CommonJS; the one module of the worker's graph that reads it
// (src/kubernetes/client/connection.ts, to find dist/vendor/) gets the URL its unbundled build
// has instead, and the build fails if any other module starts reading it.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'workers', 'reflector.worker.js');
/** The worker's script: src/kubernetes/reflector-worker/script-path.ts names it. */
const outfile = join(root, 'dist', 'workers', 'reflector.worker.cjs');
const URL_READER = join(root, 'dist', 'src', 'kubernetes', 'client', 'connection.js');

const result = await build({
  entryPoints: [entry],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  write: false,
  outfile,
  sourcemap: 'linked',
  // Loaded at run time by URL or by name, never bundled: client-node is the vendor file's.
  external: ['@kubernetes/client-node', 'piscina'],
  define: { 'import.meta.url': '__unbundledModuleUrl' },
  banner: {
    // "use strict" first: esbuild's own comes after the banner, where it is no directive.
    js: [
      '"use strict";',
      `const __unbundledModuleUrl = new URL(${JSON.stringify(relative(dirname(outfile), URL_READER))}, require('node:url').pathToFileURL(__filename)).href;`,
    ].join(' '),
  },
  metafile: true,
  legalComments: 'eof',
  logLevel: 'warning',
});

const readers = Object.keys(result.metafile.inputs).filter((input) =>
  /import\.meta\.url/.test(
    readFileSync(join(root, input), 'utf8').replace(/\/\/# sourceMappingURL.*$/m, ''),
  ),
);
const unexpected = readers.filter((input) => join(root, input) !== URL_READER);
if (unexpected.length > 0) {
  throw new Error(
    `bundle-reflector-worker: ${unexpected.join(', ')} read import.meta.url, which the bundle ` +
      'gives only connection.js its unbundled value for',
  );
}
for (const file of result.outputFiles) writeFileSync(file.path, file.contents);
// tsc's unbundled entry would only ship as a second, slower worker that nothing loads.
for (const stale of [entry, `${entry}.map`, entry.replace(/\.js$/, '.d.ts')]) rmSync(stale);
