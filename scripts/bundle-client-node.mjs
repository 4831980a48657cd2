// Part of `npm run build`: bundles client-node's `KubeConfig` (kubeconfig parsing, in-cluster
// config, exec plugins, token refresh: all of client-node's auth, unchanged) into one file,
// dist/vendor/client-node-kubeconfig.cjs, which src/kubernetes/client/connection.ts loads in place of the
// package when it exists. CommonJS, loaded by `require`: in the reflector's worker thread (itself
// CommonJS, scripts/bundle-reflector-worker.mjs) an ES module here would start Node's ESM loader
// before the first request; with both CommonJS the thread spent 133 → 104 ms of CPU from its start
// to its first request (medians of 10, empty namespace on the real API server).
//
// Why: importing @kubernetes/client-node loads ~970 modules (its generated API comes in with
// KubeConfig), 300–500 ms on this project's 2-core machine, paid by the reflector's worker thread
// before its first LIST and by the main thread for the Lease lock. The same code as one file loads
// in about 150 ms; this one in about 90 ms, because it is built from client-node's config module
// rather than its index, and leaves out the generated API client (~850 KB of models), which
// `KubeConfig` needs only for `makeApiClient`: this project never calls it on this class (it has
// its own HTTP client), and in this bundle it throws a clear error instead. Whitespace and syntax
// are minified; names are kept, so a stack trace still reads. The bundle is built from the
// installed, pinned client-node on every build, so it is never a second copy that can drift.
//
// undici (the npm package, bundled here) is evaluated only when first used: config.js imports its
// `Agent` and `ProxyAgent` for `fetch` dispatchers (`applyToFetchOptions`), which this project
// never calls (it uses `applyToHTTPSOptions` and its own HTTP client). Evaluated eagerly it was
// most of the bundle's load: 73 → 58 ms median to import the bundle on this 2-core machine
// (15 runs each, load 3.5, compile cache on; 87 → 68 ms with it off), on the path from a worker
// thread's start to its first request. The proxy packages (socks, socks-proxy-agent, hpagent),
// used only for a kubeconfig's `proxy-url`, likewise (`ON_FIRST_USE`): CPU to `require` the
// bundle 36.8 → 30.8 ms with the compile cache, 51.0 → 44.0 ms without (medians of 21).
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist', 'vendor', 'client-node-kubeconfig.cjs');
mkdirSync(dirname(outfile), { recursive: true });
// The module that defines KubeConfig, by path: the package's `exports` offer only its index.
const configModule = join(
  dirname(createRequire(join(root, 'package.json')).resolve('@kubernetes/client-node')),
  'config.js',
);
if (!existsSync(configModule)) {
  throw new Error(
    `bundle-client-node: ${configModule} is missing; has client-node's layout changed?`,
  );
}
/** What config.js imports from the generated client, for `makeApiClient` only. */
const GENERATED_CLIENT = './gen/index.js';
const GENERATED_CLIENT_STUB = `
const unavailable = () => {
  throw new Error('KubeConfig.makeApiClient is not available in pool-controller\\'s client-node bundle');
};
export const createConfiguration = unavailable;
export class ServerConfiguration {
  constructor() {
    unavailable();
  }
}
`;
/**
 * Packages config.js imports at its top but uses only on paths this project never takes (undici:
 * `fetch` dispatchers; socks, socks-proxy-agent, hpagent: a kubeconfig with a `proxy-url`), and
 * the names it imports from each. Each name becomes a stand-in that `require`s the bundled package
 * on first use (esbuild wraps a `require`d module in a function, run then): `new`, a property
 * (a static method such as `SocksClient.createConnection`), `instanceof`. A name config.js imports
 * that is not listed here fails the build.
 */
const ON_FIRST_USE = {
  undici: ['Agent', 'ProxyAgent'],
  socks: ['SocksClient'],
  'socks-proxy-agent': ['SocksProxyAgent'],
  hpagent: ['HttpProxyAgent', 'HttpsProxyAgent'],
};
/** The stand-in module for `name`'s exports `exports`. */
function onFirstUse(name, exports) {
  const bindings = exports.map(
    (exported) =>
      `export const ${exported} = standIn(() => require(${JSON.stringify(name)}).${exported});`,
  );
  return `
function standIn(load) {
  let loaded;
  const real = () => (loaded ??= load());
  return new Proxy(function standIn() {}, {
    construct: (_, args) => Reflect.construct(real(), args),
    apply: (_, self, args) => Reflect.apply(real(), self, args),
    get: (_, key) => {
      const value = Reflect.get(real(), key);
      return typeof value === 'function' ? value.bind(real()) : value;
    },
    has: (_, key) => Reflect.has(real(), key),
  });
}
${bindings.join('\n')}
`;
}
let stubbed = false;
const deferred = new Set();
await build({
  stdin: {
    contents: `export { KubeConfig } from ${JSON.stringify(configModule)};`,
    resolveDir: root,
    loader: 'js',
    sourcefile: 'client-node-kubeconfig-entry.js',
  },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile,
  // The modules were ES modules (strict); esbuild's own "use strict" is dropped when minifying.
  banner: { js: '"use strict";' },
  minifyWhitespace: true,
  minifySyntax: true,
  plugins: [
    {
      name: 'without-generated-client',
      setup(on) {
        on.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) => {
          if (args.importer !== configModule) return undefined;
          stubbed = true;
          return { path: 'generated-client-stub', namespace: 'pool-controller' };
        });
        on.onLoad({ filter: /^generated-client-stub$/, namespace: 'pool-controller' }, () => ({
          contents: GENERATED_CLIENT_STUB,
          loader: 'js',
        }));
      },
    },
    {
      name: 'packages-on-first-use',
      setup(on) {
        // Only config.js's static imports: the stand-ins' own `require` resolves as usual.
        const names = Object.keys(ON_FIRST_USE);
        on.onResolve({ filter: new RegExp(`^(${names.join('|')})$`) }, (args) => {
          if (args.importer !== configModule || args.kind !== 'import-statement') return undefined;
          deferred.add(args.path);
          return { path: args.path, namespace: 'on-first-use' };
        });
        on.onLoad({ filter: /.*/, namespace: 'on-first-use' }, (args) => ({
          contents: onFirstUse(args.path, ON_FIRST_USE[args.path]),
          loader: 'js',
          resolveDir: dirname(configModule),
        }));
      },
    },
  ],
  legalComments: 'eof',
  logLevel: 'warning',
});
// config.js no longer imports the generated client that way: the stub (and this note) must change.
if (!stubbed)
  throw new Error(`bundle-client-node: config.js no longer imports ${GENERATED_CLIENT}`);
// config.js no longer imports one of them statically: ON_FIRST_USE (and its note) must change.
const notImported = Object.keys(ON_FIRST_USE).filter((name) => !deferred.has(name));
if (notImported.length > 0) {
  throw new Error(`bundle-client-node: config.js no longer imports ${notImported.join(', ')}`);
}
