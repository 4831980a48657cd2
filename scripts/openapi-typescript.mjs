// `npm run openapi:types -- <openapi.yaml> -o <file.d.ts>`: openapi-typescript's command line, the
// generator users run to get `paths` types for openapi-fetch from openapi.yaml (docs/service.md,
// "Generating a client"); test/routes/openapi-client.test.ts runs it the same way.
//
// openapi-typescript prints its types through TypeScript's JavaScript compiler API, which
// TypeScript 7 (the project's compiler, a native binary) no longer has. As for TypeDoc
// (scripts/api-docs.mjs), TypeScript 6 is installed beside it under the name `typescript-6`, and
// this launcher sends openapi-typescript's own imports of `typescript` there (a module resolve
// hook) and nothing else's. Outside this repository, with TypeScript 5 installed, users run
// `npx openapi-typescript` directly.
import { registerHooks } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const generatorDir = pathToFileURL(join(root, 'node_modules', 'openapi-typescript')).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === 'typescript' && context.parentURL?.startsWith(`${generatorDir}/`)) {
      return nextResolve('typescript-6', context);
    }
    return nextResolve(specifier, context);
  },
});

// openapi-typescript's command line, as its bin runs it (its exports map does not list the file).
await import(pathToFileURL(join(root, 'node_modules', 'openapi-typescript', 'bin', 'cli.js')).href);
