/**
 * Which methods a path has routes for, so that a request with the wrong method gets `405 Method
 * Not Allowed` with an `Allow` header (RFC 9110 §15.5.6) instead of a 404 that says the path does
 * not exist. Fastify's router answers only "no route for this method and path"; this table is fed
 * by the `onRoute` hook with every route as it is registered, and matches a concrete path against
 * the route patterns (`/api/v1/cells/:cell`) segment by segment.
 */

interface RouteEntry {
  pattern: RegExp;
  methods: Set<string>;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `/api/v1/cells/:cell/reconcile` → a regular expression matching one concrete path. */
function compile(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return escapeRegExp(segment);
    })
    .join('/');
  return new RegExp(`^${source}$`);
}

/**
 * The table behind the API's 405 answers: fed once per route at registration, read by the not-found
 * handler to tell "no such path" from "wrong method".
 */
export class RouteMethods {
  readonly #routes = new Map<string, RouteEntry>();

  /** Records a route as Fastify registers it (`onRoute`). */
  add(method: string | readonly string[], url: string): void {
    let entry = this.#routes.get(url);
    if (!entry) {
      entry = { pattern: compile(url), methods: new Set() };
      this.#routes.set(url, entry);
    }
    for (const m of typeof method === 'string' ? [method] : method) entry.methods.add(m);
  }

  /** The methods some route accepts for `path` (no query), sorted; empty when the path is unknown. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const { pattern, methods: own } of this.#routes.values()) {
      if (pattern.test(path)) for (const m of own) methods.add(m);
    }
    return [...methods].sort();
  }
}
