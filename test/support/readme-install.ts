/**
 * The README's install block, run as written by bash in a scratch copy of deploy/, with every
 * outside tool it calls (docker, podman, kind, kubectl, helm, git, scripts/image.sh) replaced by a
 * stub that records its arguments: what a user following it would have run, and the overlay it
 * writes. Tests then check that every step names the one image reference the block built.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The revision the `git` stub reports, so the block's tag is known. */
export const STUB_REVISION = '0123456789abcdef0123456789abcdef01234567';

/** The first ```sh block after the README's "**Install.**" item, its list indentation removed. */
export function readmeInstallBlock(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const item = readme.indexOf('- **Install.**');
  if (item < 0) throw new Error('README.md has no "- **Install.**" item');
  const match = /\n( *)```sh\n([\s\S]*?)\n\1```/.exec(readme.slice(item));
  if (!match) throw new Error("the README's Install item has no ```sh block");
  const indent = match[1] ?? '';
  return (match[2] ?? '')
    .split('\n')
    .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
    .join('\n');
}

/** One recorded call: the tool and its arguments, and the environment's image name if set. */
export interface RecordedCall {
  tool: string;
  args: string[];
  poolControllerImage?: string;
}

/** What running the block did. */
export interface InstallRun {
  /** The scratch folder it ran in (deploy/ and charts/ copied there). */
  dir: string;
  calls: RecordedCall[];
  /** `$IMAGE:$TAG` as the block set them. */
  image: string;
  tag: string;
  reference: string;
}

const STUB = `#!/usr/bin/env bash
node -e '
const [tool, ...args] = process.argv.slice(1);
const call = { tool, args };
if (process.env.POOL_CONTROLLER_IMAGE) call.poolControllerImage = process.env.POOL_CONTROLLER_IMAGE;
require("fs").appendFileSync(process.env.README_INSTALL_CALLS, JSON.stringify(call) + "\\n");
' "$(basename "$0")" "$@"
if [ "$(basename "$0")" = git ]; then
  case " $* " in *" --short=12 "*) echo "\${STUB_REVISION:0:12}" ;; *) echo "$STUB_REVISION" ;; esac
fi
`;

/** Runs the README's install block with stubs; throws when bash fails. */
export function runReadmeInstall(): InstallRun {
  const dir = mkdtempSync(join(tmpdir(), 'pool-controller-readme-install-'));
  const bin = join(dir, '.stub-bin');
  mkdirSync(bin);
  mkdirSync(join(dir, 'scripts'));
  for (const tool of ['docker', 'podman', 'kind', 'kubectl', 'helm', 'git']) {
    writeFileSync(join(bin, tool), STUB);
    chmodSync(join(bin, tool), 0o755);
  }
  writeFileSync(join(dir, 'scripts', 'image.sh'), STUB);
  chmodSync(join(dir, 'scripts', 'image.sh'), 0o755);
  cpSync(join(root, 'deploy'), join(dir, 'deploy'), { recursive: true });
  cpSync(join(root, 'charts'), join(dir, 'charts'), { recursive: true });
  const calls = join(dir, '.calls');
  writeFileSync(calls, '');
  const script = `set -euo pipefail\n${readmeInstallBlock()}\necho "$IMAGE"\necho "$TAG"\n`;
  const result = spawnSync('bash', ['-c', script], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      PATH: `${bin}:${process.env.PATH ?? ''}`,
      HOME: dir,
      README_INSTALL_CALLS: calls,
      STUB_REVISION,
    },
  });
  if (result.status !== 0) {
    throw new Error(`the README's install block failed (${result.status}):\n${result.stderr}`);
  }
  const [image = '', tag = ''] = result.stdout.trim().split('\n').slice(-2);
  return {
    dir,
    image,
    tag,
    reference: `${image}:${tag}`,
    calls: readFileSync(calls, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as RecordedCall),
  };
}
