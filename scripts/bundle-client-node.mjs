// Part of `npm run build`: bundles client-node's `KubeConfig` (kubeconfig parsing, in-cluster
// config, exec plugins, token refresh: all of client-node's auth, unchanged) into one file,
// dist/vendor/client-node-kubeconfig.js, which src/kubernetes/client/connection.ts loads in place of the
// package when it exists.
//
// Why: importing @kubernetes/client-node loads ~970 modules (its generated API comes in with
// KubeConfig), 300–500 ms on this project's 2-core machine, paid by the reflector's worker thread
// before its first LIST and by the main thread for the Lease lock. The same code as one file loads
// in about 60 ms. The bundle is built from the installed, pinned client-node on every build, so
// it is never a second copy that can drift.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist', 'vendor', 'client-node-kubeconfig.js');
mkdirSync(dirname(outfile), { recursive: true });
await build({
  stdin: {
    contents: "export { KubeConfig } from '@kubernetes/client-node';",
    resolveDir: root,
    loader: 'js',
    sourcefile: 'client-node-kubeconfig-entry.js',
  },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile,
  // CommonJS dependencies inside client-node require Node built-ins; an ESM bundle needs a
  // `require` for them.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  legalComments: 'eof',
  logLevel: 'warning',
});
