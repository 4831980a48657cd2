// Node `--import` hook: any import of @kubernetes/client-node fails, and so does the build's bundle
// of it (dist/vendor/client-node-kubeconfig.js) unless ALLOW_CLIENT_NODE_BUNDLE=1, so a test can
// prove a module graph loads without client-node (only src/kubernetes/client/connection.ts may import it,
// and only lazily), or that a build loads the bundle and never the package.
import { register } from 'node:module';

const allowBundle = process.env.ALLOW_CLIENT_NODE_BUNDLE === '1';
register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier.startsWith('@kubernetes/')) throw new Error('import of ' + specifier + ' denied');
      if (!${allowBundle} && specifier.endsWith('/vendor/client-node-kubeconfig.js')) {
        const error = new Error('import of ' + specifier + ' denied');
        throw error;
      }
      return next(specifier, context);
    }
  `)}`,
);
