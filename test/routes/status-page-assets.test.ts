/**
 * The status page's built assets (scripts/bundle-status-page.mjs → dist/routes/status-page/
 * assets.json): where the route finds them, that their hashes are the build's own, and that the
 * bundled script is the browser module, running on a document of its own.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Window } from 'happy-dom';
import { afterEach, describe, expect, it } from 'vitest';
import { loadStatusPageAssets, statusPageAssetsUrl } from '../../routes/status-page/assets.js';
import { STATUS_PAGE_EVENT_TYPES } from '../../routes/status-page/live-settings.js';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const sha256 = (text: string): string =>
  `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

describe('statusPageAssetsUrl', () => {
  it('points TypeScript source (the test runner) at the build in dist/', () => {
    expect(statusPageAssetsUrl('file:///app/routes/status-page/assets.ts').href).toBe(
      'file:///app/dist/routes/status-page/assets.json',
    );
  });

  it('points compiled code at the assets beside it', () => {
    expect(statusPageAssetsUrl('file:///app/dist/routes/status-page/assets.js').href).toBe(
      'file:///app/dist/routes/status-page/assets.json',
    );
  });

  it('finds the built assets from here', () => {
    expect(fileURLToPath(statusPageAssetsUrl())).toBe(
      join(root, 'dist/routes/status-page/assets.json'),
    );
  });
});

describe('loadStatusPageAssets', () => {
  it("reads the build's script and style with the hashes of exactly those bytes", () => {
    const assets = loadStatusPageAssets();
    expect(assets.scriptHash).toBe(sha256(assets.script));
    expect(assets.styleHash).toBe(sha256(assets.style));
    expect(assets.style).toBe(readFileSync(join(root, 'routes/status-page/style.css'), 'utf8'));
  });

  it('says how to build the assets when they are missing', () => {
    expect(() => loadStatusPageAssets(new URL('file:///nowhere/assets.json'))).toThrow(
      'run "npm run build"',
    );
  });

  it('refuses a file that is not what the build writes', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'status-assets-')), 'assets.json');
    writeFileSync(path, JSON.stringify({ script: 'x', style: 'y', scriptHash: 'nope' }));
    expect(() => loadStatusPageAssets(pathToFileURL(path))).toThrow('not what the build writes');
  });
});

describe('the bundled script', () => {
  const windows: Window[] = [];
  afterEach(async () => {
    for (const window of windows.splice(0)) await window.happyDOM.close();
  });

  /** A browser window on a bare page skeleton, with the bundle run in it. */
  function run(eventSource?: new (url: string) => unknown): Window {
    const window = new Window({
      url: 'http://127.0.0.1:9/',
      // Our own build's script, nothing from outside.
      settings: {
        enableJavaScriptEvaluation: true,
        suppressInsecureJavaScriptEnvironmentWarning: true,
      },
    });
    windows.push(window);
    window.document.write(
      '<!doctype html><body data-events-from="feed-41"><span id="live-status" class="badge warn">connecting</span><ol id="event-log"></ol><span id="updated"></span></body>',
    );
    if (eventSource) Object.assign(window, { EventSource: eventSource });
    window.eval(loadStatusPageAssets().script);
    return window;
  }

  it('is one classic script with nothing left to load', () => {
    const { script } = loadStatusPageAssets();
    expect(script).not.toMatch(/^\s*(?:import|export)\s/m);
    expect(script).not.toMatch(/\brequire\(/);
  });

  it("opens the page's event stream from the id in the document", () => {
    const opened: string[] = [];
    run(
      class {
        constructor(url: string) {
          opened.push(url);
        }
        addEventListener(): void {}
        close(): void {}
      },
    );
    expect(opened).toEqual([
      `/api/v1/events?types=${STATUS_PAGE_EVENT_TYPES.join(',')}&lastEventId=feed-41`,
    ]);
  });

  it('polls where the browser has no EventSource', () => {
    const window = run();
    const status = window.document.getElementById('live-status')!;
    expect(status.textContent).toBe('polling every 2 s');
    expect(status.className).toBe('badge warn');
  });
});
