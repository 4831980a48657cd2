// Node `--import` hook: any import of @kubernetes/client-node fails, and so does the build's bundle
// of it (dist/vendor/client-node-kubeconfig.cjs, `require`d) unless ALLOW_CLIENT_NODE_BUNDLE=1, so a test can
// prove a module graph loads without client-node (only src/kubernetes/client/connection.ts may import it,
// and only lazily), or that a build loads the bundle and never the package. In-thread hooks
// (`registerHooks`, Node ≥ 22.15): `module.register` is deprecated from Node 26 (DEP0205), and the
// tests that use this hook require an empty stderr.
import { registerHooks } from 'node:module';

const allowBundle = process.env.ALLOW_CLIENT_NODE_BUNDLE === '1';
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith('@kubernetes/')) throw new Error(`import of ${specifier} denied`);
    if (!allowBundle && specifier.endsWith('/vendor/client-node-kubeconfig.cjs')) {
      throw new Error(`import of ${specifier} denied`);
    }
    return nextResolve(specifier, context);
  },
});
