// Node `--import` hook: any import of @kubernetes/client-node fails, so a test can prove a module
// graph loads without it (only src/kubernetes/api.ts may import it, and only lazily).
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      if (specifier.startsWith('@kubernetes/')) throw new Error('import of ' + specifier + ' denied');
      return next(specifier, context);
    }
  `)}`,
);
