/**
 * `npm run openapi` (write) and `npm run openapi:check` (compare): keeps the committed
 * `openapi.yaml` equal to what the routes generate. Runs from the build: `dist/src/cli/openapi-cli.js`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderOpenApi } from '../http/openapi.js';

/** From `dist/src/`, two levels up is the repository root. */
/** dist/src/cli/ → the repository root. */
const OPENAPI_PATH = fileURLToPath(new URL('../../../openapi.yaml', import.meta.url));

async function main(mode: string | undefined): Promise<number> {
  const generated = await renderOpenApi();
  if (mode === 'write') {
    await writeFile(OPENAPI_PATH, generated);
    console.log(`wrote ${OPENAPI_PATH}`);
    return 0;
  }
  if (mode === 'check') {
    const committed = await readFile(OPENAPI_PATH, 'utf8').catch(() => '');
    if (committed === generated) {
      console.log('openapi.yaml is up to date');
      return 0;
    }
    console.error(
      'openapi.yaml differs from the route schemas; run `npm run openapi` and commit it',
    );
    return 1;
  }
  console.error('usage: openapi-cli.js write|check');
  return 2;
}

process.exitCode = await main(process.argv[2]);
