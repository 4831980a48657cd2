/**
 * The Go tools e2e tests run beside the API server — helm and promtool for the chart and
 * monitoring tests; kube-controller-manager, kube-scheduler, kwok and the LeaderWorkerSet manager
 * for the real-cluster lane — built by tools.sh from the Go module proxy into the e2e cache (keyed
 * by version, trusted only when built from the current test/e2e/tools/<module>/go.mod and go.sum).
 * Cheap when cached; a fresh machine builds them, which takes minutes: call it from a beforeAll
 * with BUILD_TIMEOUT_MS.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { recipeDir } from './binaries.js';

export type Tool = 'helm' | 'promtool';

/**
 * What tools.sh builds by name: a single tool, or a module of several binaries
 * (`kube-controllers` is kube-controller-manager and kube-scheduler; `lws` is `lws-manager`).
 */
export type ToolModule = Tool | 'kube-controllers' | 'kwok' | 'lws';

/** A cold build of one tool on a loaded 2-core machine, with room to spare. */
export const BUILD_TIMEOUT_MS = 20 * 60_000;

/** Builds the tool if needed (output shown as it happens) and resolves to its path. */
export async function ensureTool(tool: Tool): Promise<string> {
  const path = (await ensureTools([tool])).get(tool);
  if (path === undefined) throw new Error(`e2e: tools.sh built ${tool} but printed no path for it`);
  return path;
}

/**
 * Builds what is missing of `modules` in one tools.sh run (output shown as it happens) and
 * resolves to each built binary's path by its name (`kube-scheduler`, `lws-manager`, ...).
 */
export function ensureTools(modules: readonly ToolModule[]): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(recipeDir, 'tools.sh'), ...modules], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const paths = new Map<string, string>();
      for (const line of out.split('\n')) {
        const match = /^([a-z-]+)=(.+)$/.exec(line.trim());
        if (match) paths.set(match[1]!, match[2]!);
      }
      if (code === 0) resolve(paths);
      else
        reject(
          new Error(
            `e2e: building ${modules.join(', ')} failed (exit ${code ?? signal}); ` +
              'the line "e2e tools: FAILED at step: ..." above names the step',
          ),
        );
    });
  });
}
