// The second half of `npm run docs:api`: every relative link in the generated API reference
// (dist/api/, or the folder given) points at a file that exists, and every `#fragment` into an
// HTML page at an `id` that page has. TypeDoc itself fails on a `{@link}` it cannot resolve
// (typedoc.json: `treatWarningsAsErrors`); this catches what it writes wrong around them.
// Prints each broken link and exits 1 when there is one.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const folder = resolve(root, process.argv[2] ?? 'dist/api');

if (!existsSync(join(folder, 'index.html'))) {
  console.error(`api-docs-links: no ${relative(root, folder)}/index.html; run npm run docs:api`);
  process.exit(1);
}

const pages = readdirSync(folder, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.html'))
  .map((entry) => join(entry.parentPath, entry.name));

const ids = new Map();
function idsOf(page) {
  if (!ids.has(page)) {
    const html = readFileSync(page, 'utf8');
    ids.set(page, new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1])));
  }
  return ids.get(page);
}

const broken = [];
for (const page of pages) {
  const html = readFileSync(page, 'utf8');
  for (const [, href] of html.matchAll(/\shref="([^"]*)"/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) continue; // absolute URL
    const [path, fragment] = href.split('#', 2);
    const target = path ? resolve(dirname(page), decodeURIComponent(path)) : page;
    const where = `${relative(folder, page)}: ${href}`;
    if (!existsSync(target)) broken.push(`${where} (no such file)`);
    else if (
      fragment &&
      target.endsWith('.html') &&
      !idsOf(target).has(decodeURIComponent(fragment))
    )
      broken.push(`${where} (no id "${fragment}" there)`);
  }
}

for (const line of broken) console.error(`api-docs-links: broken link in ${line}`);
if (broken.length > 0) process.exit(1);
console.error(`api-docs-links: ${pages.length} pages, every relative link resolves`);
