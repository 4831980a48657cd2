/**
 * Kubeconfig files for tests of the connection: one cluster (`k`) described by the lines given,
 * one user (`u`) with a bearer token, one context (`c`) joining them.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The kubeconfig's text; `currentContext` may name a context that is not there. */
export function tokenKubeconfig(
  token: string,
  clusterLines: readonly string[],
  currentContext = 'c',
): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `current-context: ${currentContext}`,
    'clusters:',
    '- name: k',
    '  cluster:',
    ...clusterLines.map((line) => `    ${line}`),
    'users:',
    '- name: u',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: c',
    '  context:',
    '    cluster: k',
    '    user: u',
    '',
  ].join('\n');
}

/** Writes `tokenKubeconfig(token, clusterLines)` to a file of its own; returns its path. */
export function writeTokenKubeconfig(token: string, clusterLines: readonly string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'pool-controller-kubeconfig-')), 'config');
  writeFileSync(path, tokenKubeconfig(token, clusterLines));
  return path;
}
