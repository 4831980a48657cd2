// Part of `npm run build`: writes dist/build-info.json, `{"revision": "<12 hex digits>"}`, which
// src/service/build-info.ts reads for `--version`, `pool_controller_build_info` and the status
// page. The revision is POOL_CONTROLLER_REVISION when set (the Dockerfile's build argument: its
// build context has no .git), else `git rev-parse` of this checkout, else `unknown`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Enough digits to name a commit unambiguously in this repository for a long time. */
const REVISION_DIGITS = 12;

function gitRevision() {
  try {
    return execFileSync('git', ['rev-parse', `--short=${REVISION_DIGITS}`, 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    }).trim();
  } catch {
    return '';
  }
}

const given = (process.env.POOL_CONTROLLER_REVISION ?? '').trim();
const revision = /^[0-9a-f]{7,40}$/.test(given)
  ? given.slice(0, REVISION_DIGITS)
  : gitRevision() || 'unknown';
const outfile = join(root, 'dist', 'build-info.json');
mkdirSync(dirname(outfile), { recursive: true });
writeFileSync(outfile, `${JSON.stringify({ revision })}\n`);
