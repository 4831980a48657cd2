/**
 * Which pod source to run when `--source` is not given, decided with plain file checks (no
 * Kubernetes client is loaded for it): in a cluster, or with a kubeconfig at hand, the real one;
 * otherwise the simulation, so `npm start` on a laptop shows something alive instead of failing.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { KubeconfigContext } from '../kubernetes/client/connection.js';
import type { SourceKind } from '../model/pod-source.js';
import { ALL_NAMESPACES, type Config, ConfigError, envName } from './config.js';
import { isNamespaceName } from './flag-values.js';

/** Where the kubelet mounts a pod's service-account credentials. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Which source runs and why, decided once at start; main logs `reason`, so a person can tell from
 * the first lines whether the service is watching a cluster or playing the simulation.
 */
export interface SourceChoice {
  kind: SourceKind;
  /** True when the kind was not asked for but inferred. */
  inferred: boolean;
  /** One sentence for the start-up log. */
  reason: string;
}

/** What the choice looks at, injected so tests need no real files or environment. */
export interface HostFacts {
  env: NodeJS.ProcessEnv;
  exists(path: string): boolean;
  home: string;
}

/**
 * The facts of the machine the process runs on: the production argument to `chooseSource` (tests
 * pass made-up ones).
 */
export function realHostFacts(): HostFacts {
  return { env: process.env, exists: existsSync, home: homedir() };
}

/** client-go's in-cluster test: the service host variable and the mounted token. */
function inCluster(facts: HostFacts): boolean {
  return (
    Boolean(facts.env.KUBERNETES_SERVICE_HOST) && facts.exists(join(SERVICE_ACCOUNT_DIR, 'token'))
  );
}

/**
 * The pod source to run: `--source` when given, else the real one in a cluster or with a kubeconfig
 * found (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`), else the simulation. Throws
 * `ConfigError` for a kubeconfig named but missing, rather than silently simulating a cluster
 * someone meant to watch.
 */
export function chooseSource(config: Config, facts: HostFacts): SourceChoice {
  if (config.kubeconfig !== undefined && !facts.exists(config.kubeconfig)) {
    throw new ConfigError(
      `invalid --kubeconfig (${envName('kubeconfig')}): ${config.kubeconfig} does not exist`,
    );
  }
  if (config.source) {
    return { kind: config.source, inferred: false, reason: `--source ${config.source}` };
  }
  if (inCluster(facts)) {
    return {
      kind: 'kubernetes',
      inferred: true,
      reason: 'running in a cluster (service-account token mounted)',
    };
  }
  if (config.kubeconfig !== undefined) {
    return { kind: 'kubernetes', inferred: true, reason: `kubeconfig ${config.kubeconfig}` };
  }
  const listed = (facts.env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  const fromEnv = listed.find((p) => facts.exists(p));
  if (listed.length > 0 && !fromEnv) {
    // Someone meant a cluster: pretending with a simulated world would hide the typo.
    throw new ConfigError(
      `KUBECONFIG names no existing file (${listed.join(delimiter)}); fix it, unset it, or pass --source simulated`,
    );
  }
  if (fromEnv) {
    return {
      kind: 'kubernetes',
      inferred: true,
      reason: `kubeconfig ${fromEnv} (from KUBECONFIG)`,
    };
  }
  const home = join(facts.home, '.kube', 'config');
  if (facts.exists(home)) {
    return { kind: 'kubernetes', inferred: true, reason: `kubeconfig ${home}` };
  }
  return {
    kind: 'simulated',
    inferred: true,
    reason:
      'no cluster found (not in a pod, no --kubeconfig, no KUBECONFIG, no ~/.kube/config): serving a SIMULATED world',
  };
}

/** The service account's namespace file, in a cluster; undefined outside one or when unreadable. */
async function ownNamespace(
  facts: HostFacts,
  readText: (path: string) => Promise<string>,
): Promise<string | undefined> {
  if (!inCluster(facts)) return undefined;
  try {
    return (await readText(join(SERVICE_ACCOUNT_DIR, 'namespace'))).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Where the watched namespace came from, for the start-up log. */
type NamespaceOrigin = 'flag' | 'kubeconfig-context' | 'service-account' | 'default';

/** The namespace to watch (`undefined`: all) and why, in one sentence for the start-up log. */
interface NamespaceChoice {
  namespace: string | undefined;
  origin: NamespaceOrigin;
  reason: string;
}

/** The longest context name a log line quotes whole: a kubeconfig's text is bounded like any other. */
const MAX_QUOTED_CONTEXT = 64;

/** A kubeconfig context's name for a log line or an error: JSON-quoted, cut past 64 characters. */
function quoteContext(name: string): string {
  return JSON.stringify(
    name.length > MAX_QUOTED_CONTEXT ? `${name.slice(0, MAX_QUOTED_CONTEXT)}…` : name,
  );
}

/** kubectl's namespace when nothing names one. */
const DEFAULT_NAMESPACE = 'default';

/**
 * The namespace to watch, by kubectl's rule: `--namespace` (`'*'`: all, only when asked), else
 * the namespace of the kubeconfig context in use (`context`, from `checkClusterConfig`), else
 * the pod's own in a cluster (what a namespaced Role allows), else `default`. A context whose
 * namespace is not a namespace name is a configuration error; its text is not quoted, being a
 * file's.
 */
export async function resolveNamespace(
  config: Config,
  facts: HostFacts,
  context: KubeconfigContext | undefined,
  readText: (path: string) => Promise<string> = (p) => readFile(p, 'utf8'),
): Promise<NamespaceChoice> {
  if (config.namespace === ALL_NAMESPACES) {
    return { namespace: undefined, origin: 'flag', reason: "--namespace '*': all namespaces" };
  }
  if (config.namespace !== undefined) {
    return { namespace: config.namespace, origin: 'flag', reason: '--namespace' };
  }
  const fromContext = context?.namespace?.trim();
  if (context && fromContext) {
    if (!isNamespaceName(fromContext)) {
      throw new ConfigError(
        context.inCluster
          ? "the service account's namespace file does not hold a namespace name; pass --namespace"
          : `kubeconfig context ${quoteContext(context.name)} names a namespace that is not a namespace name (lowercase letters, digits, '-'); fix it or pass --namespace`,
      );
    }
    return context.inCluster
      ? {
          namespace: fromContext,
          origin: 'service-account',
          reason: "the service account's namespace (in a cluster)",
        }
      : {
          namespace: fromContext,
          origin: 'kubeconfig-context',
          reason: `the namespace of kubeconfig context ${quoteContext(context.name)}`,
        };
  }
  if (context === undefined || context.inCluster) {
    const own = await ownNamespace(facts, readText);
    if (own !== undefined && isNamespaceName(own)) {
      return {
        namespace: own,
        origin: 'service-account',
        reason: "the service account's namespace (in a cluster)",
      };
    }
  }
  return {
    namespace: DEFAULT_NAMESPACE,
    origin: 'default',
    reason:
      context && !context.inCluster
        ? `kubeconfig context ${quoteContext(context.name)} names no namespace: kubectl's default`
        : "no --namespace and no namespace found: kubectl's default",
  };
}

/**
 * Where the Lease lives: `--leader-elect-resource-namespace`, else the pod's own namespace
 * (`$POD_NAMESPACE` from the downward API, or the service account's namespace file: what the
 * Role in deploy/ grants), else the watched namespace, else (all namespaces watched) the
 * kubeconfig context's namespace, else `default`.
 */
export async function resolveLeaseNamespace(
  config: Config,
  facts: HostFacts,
  watchedNamespace: string | undefined,
  context?: KubeconfigContext,
  readText: (path: string) => Promise<string> = (p) => readFile(p, 'utf8'),
): Promise<string> {
  if (config.leaderElection.resourceNamespace) return config.leaderElection.resourceNamespace;
  const fromEnv = facts.env.POD_NAMESPACE?.trim();
  if (fromEnv) return fromEnv;
  const fromContext = context?.namespace?.trim();
  return (
    (await ownNamespace(facts, readText)) ??
    watchedNamespace ??
    (fromContext && isNamespaceName(fromContext) ? fromContext : undefined) ??
    DEFAULT_NAMESPACE
  );
}
