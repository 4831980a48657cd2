#!/usr/bin/env node
/**
 * The `pool-controller` command's entry: turns on Node's compile cache for this process, starts
 * the reflector's thread, then loads and runs the command (./cli/service-command.ts).
 *
 * Why a separate entry: ES modules are all compiled before any of them runs, so the cache must be
 * on before the service's modules are imported, which only a dynamic import after it can ensure.
 * With it, a restarted process (a container restart keeps the temp dir) loads the compiled code of
 * its bundled command (Fastify, zod, pino, prom-client, ours) instead of compiling it again: that
 * is on the path from process start to the first request to the API server, and so to readiness
 * (docs/performance.md). The reflector's worker thread uses the same
 * directory (./kubernetes/reflector-worker/compile-cache.ts). The image sets `NODE_COMPILE_CACHE`
 * to a cache filled when it was built (Dockerfile, scripts/fill-compile-cache.mjs), so that a new
 * pod's first start, whose temp dir is empty, loads compiled code too.
 */
import { enableCompileCache } from 'node:module';
import { defaultCompileCacheDir } from './kubernetes/reflector-worker/compile-cache.js';

// `NODE_COMPILE_CACHE` set by the operator wins (Node enabled it already); a directory Node
// cannot create or write only leaves the cache off.
if (process.env.NODE_COMPILE_CACHE === undefined) enableCompileCache(defaultCompileCacheDir());

/** The bundled command, beside tsc's output (a path, so the compiler does not look for its source). */
const COMMAND_BUNDLE = './cli/service-bundle/service-command.js';

/** Flags that only print a text: the command then runs no reflector, so no thread is started. */
const TEXT_ONLY_FLAGS = new Set(['--help', '-h', '--version']);

const argv = process.argv.slice(2);
// The reflector's thread starts before the service's modules are loaded, so its start overlaps
// that loading and the reading of the flags (./kubernetes/reflector-worker/reflector-threads.ts).
// A build without the worker starts none here; the source then says what is missing.
const reflectorThreads = argv.some((arg) => TEXT_ONLY_FLAGS.has(arg))
  ? undefined
  : await import('./kubernetes/reflector-worker/reflector-threads.js')
      .then(({ ReflectorThreads }) => new ReflectorThreads())
      .catch(() => undefined);
// The command as `npm run build` bundles it (scripts/bundle-service.mjs): the same modules in a few
// chunks instead of ~640 files, which Node's loader took ~300 ms of CPU to resolve and link.
const { runServiceCommand } = (await import(
  COMMAND_BUNDLE
)) as typeof import('./cli/service-command.js');
process.exitCode = await runServiceCommand(argv, process.env, reflectorThreads);
