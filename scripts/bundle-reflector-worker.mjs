// Part of `npm run build`, after tsc: bundles the reflector's worker thread — tsc's
// dist/workers/reflector.worker.js and every module it imports, zod included — into that one file,
// in place. client-node stays out (the worker loads dist/vendor/client-node-kubeconfig.js, itself
// one file, while it is idle).
//
// Why: a worker thread loads its modules before its first LIST, and as some forty small ES modules
// (resolved, read, compiled and linked one by one) the reflector's took 140–170 ms on this
// project's 2-core machine; as one file, 55–75 ms. That time is on the path from process start to
// the first request, so to readiness. The bundle is made from the same build on every build.
//
// `import.meta.url` inside the bundle is the bundle's own; the one module of the worker's graph
// that reads it (src/kubernetes/client/connection.ts, to find dist/vendor/) gets the URL its
// unbundled build has instead, and the build fails if any other module starts reading it.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'workers', 'reflector.worker.js');
const URL_READER = join(root, 'dist', 'src', 'kubernetes', 'client', 'connection.js');

const result = await build({
  entryPoints: [entry],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  write: false,
  outfile: entry,
  sourcemap: 'linked',
  // Loaded at run time by URL or by name, never bundled: client-node is the vendor file's.
  external: ['@kubernetes/client-node', 'piscina'],
  define: { 'import.meta.url': '__unbundledModuleUrl' },
  banner: {
    js: [
      "import { createRequire as __createRequire } from 'node:module';",
      'const require = __createRequire(import.meta.url);',
      `const __unbundledModuleUrl = new URL(${JSON.stringify(relative(dirname(entry), URL_READER))}, import.meta.url).href;`,
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
