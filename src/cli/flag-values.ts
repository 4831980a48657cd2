/**
 * The value parsers of the flag table: each turns one flag's text into its typed value, or into
 * an issue that names what was expected and quotes what was given, so `parseConfig` can report
 * the flag (and its variable) with a reason a person can act on. Kept apart from the table so a
 * parser is read, and tested, on its own.
 */
import { z } from 'zod';
import {
  LabelSelectorError,
  labelKeyProblem,
  parseLabelSelector,
} from '../kubernetes/resources/label-selector.js';
import { MAX_TIMER_DELAY_MS } from '../runtime/clock.js';
import type { EppEndpointsFileTarget } from '../sinks/epp-endpoints-file.js';
import {
  routerTargetClash,
  SGLANG_ROUTER_ROLES,
  type SglangRouterRole,
  type SglangRouterTarget,
} from '../sinks/sglang-router.js';

/**
 * Every duration flag is bounded by the longest delay a Node.js timer keeps (the clock's
 * `MAX_TIMER_DELAY_MS`, ≈ 24.8 days), so no setting can turn into a busy loop.
 */
export const MAX_DURATION_MS = MAX_TIMER_DELAY_MS;

/** Where the service listens: `--listen`, `--health-probe-listen`. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** Means "watch all namespaces" as a `--namespace` value. */
export const ALL_NAMESPACES = '*';

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|h|m|s))+$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Parses Go-style durations (`500ms`, `90s`, `10m`, `1h30m`) into milliseconds. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, value, unit] of text.matchAll(DURATION_PART)) {
    total += Number(value) * UNIT_MS[unit!]!;
  }
  return total;
}

/**
 * The milliseconds of a positive duration Node.js can time; otherwise an issue, with `expected`
 * saying what was wanted when `text` is no positive duration at all.
 */
function positiveDuration(text: string, ctx: z.RefinementCtx, expected: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: `expected ${expected}, got ${JSON.stringify(text)}` });
  } else if (ms > MAX_DURATION_MS) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(text)} is longer than the longest timer Node.js keeps (${MAX_DURATION_MS} ms, about 24.8 days)`,
    });
  } else {
    return ms;
  }
  return z.NEVER;
}

/**
 * A positive duration flag (`what` names it in the error): Go's syntax, as kube-controller-manager's
 * duration flags take, bounded by what a Node.js timer can wait.
 */
export const duration = (what: string) =>
  z
    .string()
    .transform((text, ctx) =>
      positiveDuration(text, ctx, `a positive ${what} such as 500ms, 30s, 10m or 1h30m`),
    );

/** A duration, or `0`/`off` for "never" (`null`). */
export const optionalPeriod = (example: string) =>
  z
    .string()
    .transform((text, ctx) =>
      text === '0' || text === 'off'
        ? null
        : positiveDuration(text, ctx, `a duration such as ${example}, or 0/off to disable`),
    );

/** `--resync-period`: a duration, or `0`/`off` to never resync. */
export const resyncPeriod = optionalPeriod('30m or 10h');

/** Go's `strconv.ParseBool` spellings, as kube-controller-manager's boolean flags accept. */
const BOOLEAN_TRUE = ['true', '1', 't', 'T', 'TRUE', 'True'];
const BOOLEAN_FALSE = ['false', '0', 'f', 'F', 'FALSE', 'False'];
/**
 * A boolean flag's value: Go's spellings only, so a typo (`--leader-elect=ture`) is an error
 * naming the flag rather than a silent `false`.
 */
export const booleanFlag = z.string().transform((text, ctx) => {
  if (BOOLEAN_TRUE.includes(text)) return true;
  if (BOOLEAN_FALSE.includes(text)) return false;
  ctx.addIssue({ code: 'custom', message: `expected true or false, got ${JSON.stringify(text)}` });
  return z.NEVER;
});

/** `POOL=URL`: a pool name and the router's base URL (http or https, no query or fragment). */
export function parseSglangRouterTarget(text: string): SglangRouterTarget | string {
  const at = text.indexOf('=');
  if (at <= 0)
    return `expected POOL=URL (e.g. engine=http://router:30000), got ${JSON.stringify(text)}`;
  const pool = text.slice(0, at).trim();
  const rawUrl = text.slice(at + 1).trim();
  if (!/^[a-z0-9](?:[-a-z0-9.]{0,61}[a-z0-9])?$/.test(pool)) {
    return `expected a pool name (a Kubernetes label value) before '=', got ${JSON.stringify(pool)}`;
  }
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return `expected a router URL such as http://router:30000 after '=', got ${JSON.stringify(rawUrl)}`;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    return `expected an http(s) router URL without query or fragment, got ${JSON.stringify(rawUrl)}`;
  }
  if (url.username || url.password) {
    return 'the router URL must not carry credentials; use --sglang-router-api-key-file';
  }
  return { pool, url: url.href.replace(/\/+$/, '') };
}

/**
 * An option of the `POOL=URL` before it (`role=prefill`). A `POOL=URL` item always has `://`
 * after its `=`, so a pool named `role` is never taken for the option.
 */
const ROUTER_OPTION = /^role=([^:]*)$/;

/** Sets `target`'s role from `role=VALUE`; an error message when the value is not a role. */
function applyRouterRole(target: SglangRouterTarget, value: string): string | undefined {
  if (!SGLANG_ROUTER_ROLES.includes(value as SglangRouterRole)) {
    return `expected role=prefill or role=decode after ${target.pool}=${target.url}, got role=${JSON.stringify(value)}`;
  }
  if (target.role !== undefined) return `role is given twice for ${target.pool}=${target.url}`;
  target.role = value as SglangRouterRole;
  return undefined;
}

/**
 * Comma-separated `POOL=URL[,role=prefill|decode]` items (the flag may also be repeated; the
 * variable takes them all in one list, each option after its item).
 */
export const sglangRouters = z.array(z.string()).transform((items, ctx) => {
  const targets: SglangRouterTarget[] = [];
  const fail = (message: string): typeof z.NEVER => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  for (const value of items) {
    // Options belong to the item before them within one flag value.
    let current: SglangRouterTarget | undefined;
    for (const item of value
      .split(',')
      .map((i) => i.trim())
      .filter(Boolean)) {
      const option = ROUTER_OPTION.exec(item);
      if (option) {
        if (current === undefined) {
          return fail(`${JSON.stringify(item)} must follow the POOL=URL it belongs to`);
        }
        const error = applyRouterRole(current, option[1] as string);
        if (error) return fail(error);
        continue;
      }
      const parsed = parseSglangRouterTarget(item);
      if (typeof parsed === 'string') return fail(parsed);
      targets.push(parsed);
      current = parsed;
    }
  }
  // Checked once every option is known: `a=URL,role=prefill` and `b=URL,role=decode` may share.
  for (let i = 1; i < targets.length; i += 1) {
    const clash = routerTargetClash(targets.slice(0, i), targets[i] as SglangRouterTarget);
    if (clash) return fail(clash);
  }
  return targets;
});

/**
 * Comma-separated `POOL=PATH[,role=prefill|decode]` items of `--epp-endpoints-file` (repeatable;
 * the variable takes them all in one list). `PATH` is absolute (the EPP reads the same file on a
 * shared volume; a relative path would depend on the working directory) and has no comma; one
 * path is written for one pool only.
 */
export const eppEndpointsFiles = z.array(z.string()).transform((items, ctx) => {
  const targets: EppEndpointsFileTarget[] = [];
  const fail = (message: string): typeof z.NEVER => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  for (const value of items) {
    let current: EppEndpointsFileTarget | undefined;
    for (const item of value
      .split(',')
      .map((i) => i.trim())
      .filter(Boolean)) {
      const option = /^role=(.*)$/.exec(item);
      if (option) {
        const role = option[1] as string;
        if (current === undefined) {
          return fail(`${JSON.stringify(item)} must follow the POOL=PATH it belongs to`);
        }
        if (role !== 'prefill' && role !== 'decode') {
          return fail(
            `expected role=prefill or role=decode after ${current.pool}=${current.path}, got role=${JSON.stringify(role)}`,
          );
        }
        if (current.role !== undefined) {
          return fail(`role is given twice for ${current.pool}=${current.path}`);
        }
        current.role = role;
        continue;
      }
      const at = item.indexOf('=');
      const pool = at > 0 ? item.slice(0, at).trim() : '';
      const path = at > 0 ? item.slice(at + 1).trim() : '';
      if (!/^[a-z0-9](?:[-a-z0-9.]{0,61}[a-z0-9])?$/.test(pool) || !path.startsWith('/')) {
        return fail(
          `expected POOL=PATH with a pool name and an absolute file path (e.g. engine=/var/run/epp/endpoints.yaml), got ${JSON.stringify(item)}`,
        );
      }
      if (path.endsWith('/')) return fail(`expected a file path, not a directory: ${path}`);
      if (targets.some((t) => t.path === path)) {
        return fail(`${path} is given twice; one file holds one pool's endpoints`);
      }
      current = { pool, path };
      targets.push(current);
    }
  }
  return targets;
});

/** A DNS-1123 label fragment, as a Service name suffix must be. */
export const serviceSuffix = z.string().refine((v) => /^[-a-z0-9]{1,20}$/.test(v), {
  error: (issue) =>
    `expected up to 20 lowercase letters, digits or '-', got ${JSON.stringify(issue.input)}`,
});

/** A DNS-1123 subdomain, as a Lease name must be. */
export const resourceName = z
  .string()
  .refine((v) => v.length <= 253 && /^[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?$/.test(v), {
    error: (issue) =>
      `expected a Kubernetes object name (lowercase letters, digits, '-', '.'), got ${JSON.stringify(issue.input)}`,
  });

/** Parses `host:port`, `[v6]:port` or `:port`. */
export function parseListen(text: string): ListenAddress | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65_535) return undefined;
  const host = match[1] ?? (match[2] || '0.0.0.0');
  return { host, port };
}

/** A listen address flag: `parseListen`'s forms, or an error that shows them. */
export const listen = z.string().transform((text, ctx) => {
  const address = parseListen(text);
  if (!address) {
    ctx.addIssue({
      code: 'custom',
      message: `expected host:port (e.g. 0.0.0.0:8080, 127.0.0.1:9000, [::]:8080), got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  return address;
});

/** Kubernetes' qualified name: an optional DNS-subdomain prefix, `/`, and a ≤63-char name. */
export const labelKey = z.string().refine((v) => labelKeyProblem(v) === undefined, {
  error: (issue) =>
    `expected a Kubernetes label key such as example.com/name, got ${JSON.stringify(issue.input)}`,
});

/**
 * A selector the API server would accept (see label-selector.ts). Checked here because the API
 * server only says no at the first LIST, and then says it again on every relist, forever.
 */
export const labelSelector = z
  .string()
  .trim()
  .min(1, { error: 'expected a label selector, got an empty value' })
  .superRefine((text, ctx) => {
    try {
      parseLabelSelector(text);
    } catch (err) {
      if (!(err instanceof LabelSelectorError)) throw err;
      ctx.addIssue({
        code: 'custom',
        message: `expected a label selector such as app=engine,tier in (a,b),!canary; ${JSON.stringify(text)} is not one: ${err.message}`,
      });
    }
  });

/** An RFC 1123 label, as Kubernetes requires of namespace names. */
export function isNamespaceName(text: string): boolean {
  return /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/.test(text);
}

/** `--namespace`: a namespace name, or `*` for all namespaces. */
export const namespace = z.string().refine((v) => v === ALL_NAMESPACES || isNamespaceName(v), {
  error: (issue) =>
    `expected a namespace name (lowercase letters, digits, '-') or '*' for all namespaces, got ${JSON.stringify(issue.input)}`,
});

/** IANA service name, what Kubernetes allows as a container port name. */
export const portName = z
  .string()
  .refine((v) => /^(?=.*[a-z])[a-z0-9](?:-?[a-z0-9])*$/.test(v) && v.length <= 15, {
    error: (issue) =>
      `expected a container port name (≤15 lowercase letters, digits and single '-'), got ${JSON.stringify(issue.input)}`,
  });

/** A text flag that must say something: an empty value (often an unset variable) is an error. */
export const nonEmpty = (what: string) =>
  z
    .string()
    .trim()
    .min(1, { error: `expected ${what}, got an empty value` });
