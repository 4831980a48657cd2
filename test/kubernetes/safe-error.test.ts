import { describe, expect, it } from 'vitest';
import { ApiConnectionError, ApiStatusError } from '../../src/kubernetes/client/api-errors.js';
import {
  kubeconfigErrorSummary,
  MAX_SAFE_ERROR_LENGTH,
  redactSecrets,
  safeErrorMessage,
} from '../../src/kubernetes/client/safe-error.js';
import { describeFailure } from '../../src/kubernetes/reflector/reflector-failure.js';

describe('redactSecrets', () => {
  it.each([
    ['token: abc.def', 'token: [redacted]'],
    ['password=hunter2 rest', 'password=[redacted] rest'],
    ['client-key-data: LS0tLS1', 'client-key-data: [redacted]'],
    ['"token":"abc"', '"token":[redacted]'],
    ['Authorization: Bearer abc.def', 'Authorization: [redacted] [redacted]'],
    ['sent Bearer abc.def to it', 'sent Bearer [redacted] to it'],
    ['connect ECONNREFUSED 127.0.0.1:6443', 'connect ECONNREFUSED 127.0.0.1:6443'],
  ])('%s → %s', (text, safe) => {
    expect(redactSecrets(text)).toBe(safe);
  });

  it('keeps only the first line, where no quoted file contents live', () => {
    expect(redactSecrets('bad thing (8:4)\n\n 6 |   password: x\n 7 |   token: y')).toBe(
      'bad thing (8:4)',
    );
  });

  it('caps the length', () => {
    expect(redactSecrets('x'.repeat(1000))).toHaveLength(MAX_SAFE_ERROR_LENGTH);
  });
});

describe('kubeconfigErrorSummary', () => {
  it('names file-system errors by kind', () => {
    const error = Object.assign(new Error("EACCES: permission denied, open '/k'"), {
      code: 'EACCES',
    });
    expect(kubeconfigErrorSummary(error)).toBe('permission denied (EACCES)');
  });

  it('drops what a YAML reason quotes from the document', () => {
    const error = Object.assign(new Error('unknown tag !<tag:secret> (3:1)\n\n 1 | token: x'), {
      name: 'YAMLException',
      reason: 'unknown tag !<tag:secret>',
      mark: { line: 2, column: 0, buffer: 'token: x' },
    });
    expect(safeErrorMessage(error)).toBe('YAML syntax error at line 3, column 1: unknown tag !…');
  });
});

describe('errors that reach stats and logs are redacted', () => {
  it('ApiConnectionError keeps no cause and no credential', () => {
    const error = new ApiConnectionError(
      'LIST',
      new Error('exec plugin failed: {"status":{"token":"abc123"}}'),
    );
    expect(error.message).toBe('LIST: exec plugin failed: {"status":{"token":[redacted]}}');
    expect(error.cause).toBeUndefined();
  });

  it('describeFailure redacts a status message and connection text', () => {
    expect(
      describeFailure({
        kind: 'status',
        inStream: false,
        status: { code: 401, message: 'proxy says: password=letmein', causes: [] },
      }),
    ).toBe('HTTP 401: proxy says: password=[redacted]');
    expect(
      describeFailure({ kind: 'connection', message: 'Bearer abc.def rejected', answered: true }),
    ).toBe('Bearer [redacted] rejected');
    expect(
      new ApiStatusError('WATCH', { code: 500, message: 'token: abc', causes: [] }).message,
    ).toBe('WATCH failed: HTTP 500: token: [redacted]');
  });
});
