/**
 * Secrets read from files (`--admin-token-file`, `--sglang-router-api-key-file`): the one place a
 * secret enters the service. Files rather than flags or variables, because a flag shows in `ps`
 * and a variable in the pod spec; every error names the flag and the path, never the contents.
 */
import { readFile, stat } from 'node:fs/promises';
import { ConfigError, envName } from './config.js';

/** A secret read from a file, and what the caller should log about it (never the secret). */
interface SecretFile {
  secret: string;
  /** One line each, for the caller's `warn` log: e.g. a file other users may read. */
  warnings: string[];
}

/**
 * Reads the admin token. Surrounding whitespace is trimmed (a Secret written with `echo` ends in a
 * newline); an unreadable or empty file, or a token no `Authorization` header could carry, is a
 * start-up error naming the flag, never "no auth" and never a token that matches nothing.
 */
export async function readAdminTokenFile(path: string): Promise<SecretFile> {
  return readSecretFile(path, 'admin-token-file');
}

/** `readAdminTokenFile`'s token; `onWarning` hears its warnings. */
export async function loadAdminToken(
  path: string,
  onWarning: (message: string) => void = () => {},
): Promise<string> {
  return loadSecretFile(path, 'admin-token-file', onWarning);
}

/** `readSecretFile`'s secret; `onWarning` hears its warnings. */
export async function loadSecretFile(
  path: string,
  flagName: string,
  onWarning: (message: string) => void = () => {},
): Promise<string> {
  const { secret, warnings } = await readSecretFile(path, flagName);
  for (const warning of warnings) onWarning(warning);
  return secret;
}

/**
 * Visible ASCII: what a header value can carry and compare byte for byte. Node decodes header
 * bytes as Latin-1, so a token with any other character could never equal what a client sends.
 */
const HEADER_SAFE = /^[\x21-\x7e]+$/;

/**
 * Reads a one-line secret (a token, an API key) from a file named by `flagName`. Never echoes the
 * contents: errors name the flag, the path and what is wrong (and where, by character position).
 * Refused: an unreadable or empty file, invalid UTF-8, whitespace inside the secret, any character
 * outside visible ASCII. Warned about: a file its group or other users may read.
 */
async function readSecretFile(path: string, flagName: string): Promise<SecretFile> {
  const flag = `--${flagName} (${envName(flagName)})`;
  let bytes: Buffer;
  let mode: number;
  try {
    bytes = await readFile(path);
    mode = (await stat(path)).mode;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`invalid ${flag}: cannot read ${path}${code ? ` (${code})` : ''}`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ConfigError(`invalid ${flag}: ${path} is not valid UTF-8 text`);
  }
  const secret = text.trim();
  if (secret === '') throw new ConfigError(`invalid ${flag}: ${path} is empty`);
  const inner = secret.search(/\s/);
  if (inner >= 0) {
    throw new ConfigError(
      `invalid ${flag}: the secret in ${path} contains whitespace (at character ${inner + 1}); it must be one token, which no header could carry with whitespace inside`,
    );
  }
  if (!HEADER_SAFE.test(secret)) {
    const at = [...secret].findIndex((c) => !HEADER_SAFE.test(c));
    throw new ConfigError(
      `invalid ${flag}: the secret in ${path} contains a character outside visible ASCII (at character ${at + 1}), which an HTTP header cannot carry unchanged`,
    );
  }
  const warnings: string[] = [];
  if ((mode & 0o044) !== 0) {
    warnings.push(
      `${flag}: ${path} is readable by ${mode & 0o004 ? 'every user' : 'its group'} (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); make it readable by its owner only (chmod 600, or a Secret volume's defaultMode: 0400)`,
    );
  }
  return { secret, warnings };
}
