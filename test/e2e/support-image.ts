/**
 * The service image (built from the Dockerfile by scripts/image.sh) run as a container the way a
 * cluster runs it: `podman --runtime runc run` as the image's user, root filesystem read-only with
 * a writable /tmp (the chart's emptyDir), every capability dropped, no new privileges, on the
 * host's network so it reaches the e2e apiserver on loopback. Used by image.test.ts.
 *
 * runc, not crun: crun cannot start containers on this host's cgroup layout. The rlimits are
 * given explicitly because root here may not raise them: podman's default open-files limit is
 * above this host's hard limit, so the container would not start.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { listeningPort, waitFor } from './support-service.js';

const run = promisify(execFile);

/** Where a container reads a mounted file from; the root filesystem has nothing writable. */
export const KUBECONFIG_IN_CONTAINER = '/etc/pool-controller/kubeconfig';

/**
 * The highest process limit a container gets here: podman lowers its own RLIMIT_NPROC to its
 * default, 32768, before starting the runtime, so a higher value (even the host's hard limit)
 * cannot be set from inside.
 */
const PODMAN_NPROC_CEILING = 32_768;
/** podman's default open-files limit, the most a container asks for where the host allows more. */
const PODMAN_NOFILE_DEFAULT = 1_048_576;

/** How long `podman` commands other than `run` (inspect, exec, kill) may take. */
const PODMAN_COMMAND_TIMEOUT_MS = 30_000;

/** `podman` with the runtime this host can run. */
function podmanArgs(args: readonly string[]): string[] {
  return ['--runtime', 'runc', ...args];
}

/** The hard limit of `resource` ("Max open files", "Max processes") of this process. */
export function hardLimit(resource: string): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(resource));
  const hard = line?.slice(resource.length).trim().split(/\s+/)[1];
  if (!hard) throw new Error(`no hard limit for "${resource}" in /proc/self/limits`);
  return hard === 'unlimited' ? Number.POSITIVE_INFINITY : Number(hard);
}

/** The fields of /proc/<pid>/status that say who a process is and what it may do. */
export interface ProcessIdentity {
  uid: string;
  gid: string;
  capEff: string;
  capPrm: string;
  capBnd: string;
  noNewPrivs: string;
}

/** A running container of the image, with what it wrote to stdout and stderr. */
export class ImageContainer {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private output = '';

  private constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.child = child;
    const collect = (chunk: string): void => {
      this.output += chunk;
    };
    child.stdout?.setEncoding('utf8').on('data', collect);
    child.stderr?.setEncoding('utf8').on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /**
   * Starts `image` with `args` (after the entry point) and `--listen 127.0.0.1:0`; `mounts` are
   * read-only bind mounts, host path to container path.
   */
  static start(
    image: string,
    args: readonly string[],
    mounts: ReadonlyArray<readonly [string, string]> = [],
  ): ImageContainer {
    const name = `pool-controller-e2e-${randomBytes(4).toString('hex')}`;
    const nofile = Math.min(hardLimit('Max open files'), PODMAN_NOFILE_DEFAULT);
    const nproc = Math.min(hardLimit('Max processes'), PODMAN_NPROC_CEILING);
    const runArgs = [
      'run',
      '--rm',
      '--name',
      name,
      '--network',
      'host',
      '--read-only',
      '--read-only-tmpfs=false',
      '--tmpfs',
      '/tmp:rw,size=16m',
      '--cap-drop',
      'all',
      '--security-opt',
      'no-new-privileges',
      '--ulimit',
      `nofile=${nofile}:${nofile}`,
      '--ulimit',
      `nproc=${nproc}:${nproc}`,
      ...mounts.flatMap(([host, inside]) => ['--volume', `${host}:${inside}:ro`]),
      image,
      ...args,
      '--listen',
      '127.0.0.1:0',
      '--log-format',
      'json',
    ];
    const child = spawn('podman', podmanArgs(runArgs), { stdio: ['ignore', 'pipe', 'pipe'] });
    return new ImageContainer(name, child);
  }

  /** stdout and stderr so far. */
  logs(): string {
    return this.output;
  }

  /** Resolves with `http://127.0.0.1:<port>` once the service logged that it listens. */
  async listening(): Promise<string> {
    const exited = this.exited.then((code) => {
      throw new Error(`the container exited (${code}):\n${this.output}`);
    });
    const port = await Promise.race([
      waitFor('the container to listen', async () => listeningPort(this.output), 60_000),
      exited,
    ]);
    return `http://127.0.0.1:${port}`;
  }

  /** The container's main process as the host's kernel sees it. */
  async identity(): Promise<ProcessIdentity> {
    const { stdout } = await run(
      'podman',
      podmanArgs(['inspect', '--format', '{{.State.Pid}}', this.name]),
      {
        timeout: PODMAN_COMMAND_TIMEOUT_MS,
      },
    );
    const status = readFileSync(`/proc/${stdout.trim()}/status`, 'utf8');
    const field = (key: string): string => {
      const line = status.split('\n').find((l) => l.startsWith(`${key}:`));
      return line ? line.slice(key.length + 1).trim() : '';
    };
    return {
      uid: field('Uid'),
      gid: field('Gid'),
      capEff: field('CapEff'),
      capPrm: field('CapPrm'),
      capBnd: field('CapBnd'),
      noNewPrivs: field('NoNewPrivs'),
    };
  }

  /** Runs `node -e script` inside the container; resolves with its stdout. */
  async node(script: string): Promise<string> {
    const { stdout } = await run('podman', podmanArgs(['exec', this.name, 'node', '-e', script]), {
      timeout: PODMAN_COMMAND_TIMEOUT_MS,
    });
    return stdout.trim();
  }

  /** Sends SIGTERM to the service, as the kubelet does, and resolves with the exit code. */
  async terminate(): Promise<number | null> {
    await run('podman', podmanArgs(['kill', '--signal', 'TERM', this.name]), {
      timeout: PODMAN_COMMAND_TIMEOUT_MS,
    });
    return this.exited;
  }

  /** Removes the container whatever its state (afterAll). */
  async remove(): Promise<void> {
    if (this.child.exitCode !== null) return;
    await run('podman', podmanArgs(['rm', '--force', '--time', '0', this.name]), {
      timeout: PODMAN_COMMAND_TIMEOUT_MS,
    }).catch(() => undefined);
    await this.exited;
  }
}
