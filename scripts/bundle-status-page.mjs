// Part of `npm run build`: builds the status page's two inline assets and their CSP hashes into
// dist/routes/status-page/assets.json, which routes/status-page/assets.ts reads once at start.
//
// - the script: routes/status-page/browser/main.ts and what it imports (the same section
//   renderers the server paints with), bundled by esbuild into one classic script;
// - the style: routes/status-page/style.css, as written.
//
// Why at build time: the Content-Security-Policy allows exactly these bytes by hash, so they are
// fixed when the build is, and the server never hashes or bundles anything while it runs.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const page = join(root, 'routes', 'status-page');
const outfile = join(root, 'dist', 'routes', 'status-page', 'assets.json');

const bundled = await build({
  entryPoints: [join(page, 'browser', 'main.ts')],
  bundle: true,
  platform: 'browser',
  format: 'iife',
  // Every browser with EventSource and CSP hashes runs ES2022 (private fields, as written).
  target: 'es2022',
  write: false,
  legalComments: 'none',
  logLevel: 'warning',
});
const script = bundled.outputFiles[0].text;
const style = readFileSync(join(page, 'style.css'), 'utf8');

// Both are inlined into the document: text that would end their element early must not occur.
if (/<\/script|<!--/i.test(script)) {
  throw new Error('the status page bundle contains "</script" or "<!--"; it cannot be inlined');
}
if (/<\/style/i.test(style)) {
  throw new Error('routes/status-page/style.css contains "</style"; it cannot be inlined');
}

/** A CSP source expression allowing exactly `text`. */
const sha256 = (text) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

mkdirSync(dirname(outfile), { recursive: true });
writeFileSync(
  outfile,
  `${JSON.stringify({ script, style, scriptHash: sha256(script), styleHash: sha256(style) })}\n`,
);
