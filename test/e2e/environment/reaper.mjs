// Kills an e2e environment's processes if the test process that started them dies without
// stopping them (a crashed worker, a killed test run), so no etcd or kube-apiserver is left behind.
//
// Plain JavaScript because it runs in plain Node, outside the test runner.
// Usage: node reaper.mjs <test-process-pid> <pid-folder> <state-folder>
// Every file in <pid-folder> holds the pid of one process group leader. When the test process is
// gone, each group is killed and <state-folder> removed. When <pid-folder> disappears, the
// environment was stopped normally and the reaper just exits.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const pollIntervalMs = 500;
const [watchedPidText, pidDir, stateDir] = process.argv.slice(2);
const watchedPid = Number(watchedPidText);
const startingParent = process.ppid;

if (!Number.isInteger(watchedPid) || !pidDir || !stateDir) {
  process.stderr.write('usage: node reaper.mjs <test-process-pid> <pid-folder> <state-folder>\n');
  process.exit(2);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killAll() {
  for (const file of readdirSync(pidDir)) {
    const pid = Number(readFileSync(join(pidDir, file), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 1) continue;
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

setInterval(() => {
  if (!existsSync(pidDir)) process.exit(0);
  // Reparenting means our parent (the test process) is gone even if its pid was reused or it
  // lingers as a zombie.
  if (process.ppid === startingParent && alive(watchedPid)) return;
  try {
    killAll();
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
    process.exit(0);
  }
}, pollIntervalMs);
