#!/usr/bin/env node
/**
 * The `kubectl-pools` command (the package's second `bin`): `kubectl pools` once on the PATH.
 * Its whole behaviour is `runKubectlPools` (./kubectl-pools.ts); this only binds it to the
 * process; `-n` defaults to `default`.
 */
import { loadApiConnection } from '../kubernetes/client/connection.js';
import { runKubectlPools } from './kubectl-pools.js';

process.exitCode = await runKubectlPools(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  connect: (options) => loadApiConnection(options),
});
