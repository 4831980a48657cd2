/**
 * helm and promtool for the chart and monitoring e2e tests, built by tools.sh from the Go module
 * proxy into the e2e cache (keyed by version, trusted only when built from the current
 * test/e2e/tools/<tool>/go.mod and go.sum). Cheap when cached; a fresh machine builds them, which
 * takes minutes: call it from a beforeAll with BUILD_TIMEOUT_MS.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { recipeDir } from './binaries.js';

export type Tool = 'helm' | 'promtool';

/** A cold build of one tool on a loaded 2-core machine, with room to spare. */
export const BUILD_TIMEOUT_MS = 20 * 60_000;

/** Builds the tool if needed (output shown as it happens) and resolves to its path. */
export function ensureTool(tool: Tool): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(recipeDir, 'tools.sh'), tool], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const path = /^(?:helm|promtool)=(.+)$/m.exec(out)?.[1];
      if (code === 0 && path && out.startsWith(`${tool}=`)) resolve(path.trim());
      else
        reject(
          new Error(
            `e2e: building ${tool} failed (exit ${code ?? signal}); ` +
              'the line "e2e tools: FAILED at step: ..." above names the step',
          ),
        );
    });
  });
}
