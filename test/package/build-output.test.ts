/**
 * `npm run build` starts from an empty dist/: a module moved or deleted in src/ must not live on
 * as a stale compiled copy that tests import, or that `npm pack` ships. (Moving src/kubernetes/
 * into sub-folders left dist/src/kubernetes/backoff.js importing a function that had moved.)
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Where `npm run build` writes the command's bundle, under dist/src. */
const SERVICE_BUNDLE = 'cli/service-bundle/';

describe('the build output', () => {
  it('holds a compiled module only for a source file that exists', () => {
    const compiled = (readdirSync(join(root, 'dist/src'), { recursive: true }) as string[])
      .filter((name) => name.endsWith('.js'))
      .map((name) => name.split('\\').join('/'))
      // The command's bundle (scripts/bundle-service.mjs): chunks of the modules checked here.
      .filter((name) => !name.startsWith(SERVICE_BUNDLE));
    expect(compiled.length).toBeGreaterThan(50);
    const orphans = compiled.filter(
      (name) => !existsSync(join(root, 'src', name.replace(/\.js$/, '.ts'))),
    );
    expect(orphans).toEqual([]);
  });
});
