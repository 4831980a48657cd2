/**
 * Error text that is safe to show: in an HTTP response (`GET /api/v1/reflector`'s `lastError`,
 * a health check), in a log line, or across the worker boundary.
 *
 * Some errors quote what they read. js-yaml's message for a kubeconfig with a syntax error carries
 * a snippet of the file's lines around the fault (a `password:`, a `token:`), and keeps the whole
 * file in `mark.buffer`; an exec credential plugin's failure may quote its output. Such errors are
 * reduced here to a summary (the file, the line, the kind of error) before anyone sees them, and
 * never kept as a `cause`, so a logger that serialises causes cannot reach the original either.
 */

/** The longest error text passed on: one line a person can read, not a dump. */
export const MAX_SAFE_ERROR_LENGTH = 300;

/**
 * Keys whose values are credentials (kubeconfig fields, HTTP auth, common secret names). Matched
 * case-insensitively as `key: value` or `key=value`; the value is replaced.
 */
const SECRET_ASSIGNMENT =
  /\b((?:client-)?(?:key|certificate)-data|client-key|id-token|refresh-token|access-token|token|password|passwd|secret|api[-_]?key|authorization|cookie)(["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;}]+)/gi;
/** `Bearer <token>` / `Basic <credentials>` wherever they appear. */
const AUTH_SCHEME = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/g;

/**
 * One line of `text` with anything that looks like a credential replaced by `[redacted]`: the
 * first line only (multi-line messages are where quoted file contents live), and at most
 * `MAX_SAFE_ERROR_LENGTH` characters.
 */
export function redactSecrets(text: string): string {
  const firstLine = text.split(/\r?\n/, 1)[0] ?? '';
  const redacted = firstLine
    .replace(AUTH_SCHEME, '$1 [redacted]')
    .replace(SECRET_ASSIGNMENT, '$1$2[redacted]')
    .trim();
  return redacted.length > MAX_SAFE_ERROR_LENGTH
    ? `${redacted.slice(0, MAX_SAFE_ERROR_LENGTH - 1)}…`
    : redacted;
}

/** `error`'s message, redacted; for any error whose text may have come from outside. */
export function safeErrorMessage(error: unknown): string {
  if (isYamlError(error)) return yamlSummary(error);
  const text = error instanceof Error ? error.message : String(error);
  return redactSecrets(text);
}

interface YamlError {
  name: 'YAMLException';
  reason?: unknown;
  mark?: { line?: unknown; column?: unknown };
}

function isYamlError(error: unknown): error is YamlError {
  return error instanceof Error && error.name === 'YAMLException';
}

/**
 * js-yaml's reason without anything it quoted from the document: its reasons are fixed phrases
 * ("bad indentation of a mapping entry"), but a few name a tag, an alias or a key from the file.
 */
function yamlReason(reason: unknown): string {
  if (typeof reason !== 'string' || reason === '') return 'invalid YAML';
  return redactSecrets(reason.replace(/"[^"]*"|'[^']*'|<[^>]*>|`[^`]*`/g, '…'));
}

/** "YAML syntax error at line 8, column 4: bad indentation of a mapping entry". */
function yamlSummary(error: YamlError): string {
  const line = typeof error.mark?.line === 'number' ? error.mark.line + 1 : undefined;
  const column = typeof error.mark?.column === 'number' ? error.mark.column + 1 : undefined;
  const where =
    line === undefined ? '' : ` at line ${line}${column === undefined ? '' : `, column ${column}`}`;
  return `YAML syntax error${where}: ${yamlReason(error.reason)}`;
}

/** What a file-system error means, without its message (which is fine, but says it twice). */
const FS_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'is a directory, not a file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a parent of the path is not a directory',
  ELOOP: 'too many symbolic links',
};

/**
 * Why a kubeconfig could not be read, as one safe line: a YAML error as its line, column and kind;
 * a file-system error as its kind; a file that is not a kubeconfig document as such; anything
 * else redacted.
 */
export function kubeconfigErrorSummary(error: unknown): string {
  if (isYamlError(error)) return yamlSummary(error);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && code in FS_ERRORS) return `${FS_ERRORS[code]} (${code})`;
  // client-node reads `obj.clusters` of whatever YAML gave: an empty document gives undefined.
  if (error instanceof TypeError) return 'not a kubeconfig document (empty, or not a YAML mapping)';
  return safeErrorMessage(error);
}
