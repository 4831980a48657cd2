/**
 * The status page's browser bundle entry (scripts/bundle-status-page.mjs bundles it into the
 * page's one inline script): runs `LivePage` against the window's document, `fetch`,
 * `EventSource` and timers. Nothing else imports it.
 */
import { LivePage, type PageClock, type PageDocument, type PageEventSource } from './live-page.js';

// The browser's globals, typed as far as the page uses them (the project's TypeScript program has
// no DOM library; see live-page.ts).
declare const document: PageDocument;
declare const EventSource: new (url: string) => PageEventSource;

/** The window's timers as a `PageClock`: the page's only real-time waits. */
const browserClock: PageClock = {
  sleep(ms, signal) {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

new LivePage({
  document,
  fetch: (path, init) => fetch(path, init),
  openEvents: typeof EventSource === 'function' ? (url) => new EventSource(url) : null,
  clock: browserClock,
  wallNow: () => Date.now(),
  showTime: (iso) => new Date(iso || Date.now()).toLocaleTimeString(),
}).start();
