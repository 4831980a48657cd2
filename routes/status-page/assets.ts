/**
 * The one place that knows where the status page's built assets are, and the policy built from
 * them. `npm run build` (scripts/bundle-status-page.mjs) bundles the browser module, reads the
 * style sheet and writes both with their SHA-256 hashes to `dist/routes/status-page/assets.json`;
 * the route reads that file once when it is registered, so nothing is hashed per request and the
 * Content-Security-Policy allows exactly the bytes the page inlines.
 *
 * Like the reflector's worker, the assets always come from the build, whether this module runs
 * compiled in plain Node (it is then `dist/routes/status-page/assets.js`, beside the file) or as
 * TypeScript under the test runner (`routes/status-page/assets.ts`; `npm test` builds first).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { StatusPageInline } from './document.js';

/** What the build writes: the inline script and style, each with its CSP source expression. */
export interface StatusPageAssets extends StatusPageInline {
  /** `'sha256-…'` of `script`. */
  scriptHash: string;
  /** `'sha256-…'` of `style`. */
  styleHash: string;
}

/** The built assets, located relative to this module. */
export function statusPageAssetsUrl(moduleUrl: string = import.meta.url): URL {
  const fromSource = /\.[cm]?ts$/.test(new URL(moduleUrl).pathname);
  // routes/status-page/ → <root>/dist/routes/status-page/ ; dist/routes/status-page/ → itself
  return new URL(
    fromSource ? '../../dist/routes/status-page/assets.json' : './assets.json',
    moduleUrl,
  );
}

const HASH = /^'sha256-[A-Za-z0-9+/]{43}='$/;

/** The built assets, or a clear error saying how to produce them. */
export function loadStatusPageAssets(url: URL = statusPageAssetsUrl()): StatusPageAssets {
  const path = fileURLToPath(url);
  if (!existsSync(path)) {
    throw new Error(`the status page is not built (${path} is missing): run "npm run build"`);
  }
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<StatusPageAssets>;
  const { script, style, scriptHash, styleHash } = parsed;
  if (
    typeof script !== 'string' ||
    typeof style !== 'string' ||
    typeof scriptHash !== 'string' ||
    typeof styleHash !== 'string' ||
    !HASH.test(scriptHash) ||
    !HASH.test(styleHash)
  ) {
    throw new Error(`the status page's assets (${path}) are not what the build writes: rebuild`);
  }
  return { script, style, scriptHash, styleHash };
}

/**
 * The page's Content-Security-Policy: its own inline script and style (by hash) and requests to
 * its own origin (the JSON API and the event stream); nothing else, not even images or frames.
 */
export function statusPageCsp(assets: StatusPageAssets): string {
  return [
    "default-src 'none'",
    `script-src ${assets.scriptHash}`,
    `style-src ${assets.styleHash}`,
    "connect-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
