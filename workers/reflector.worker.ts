/**
 * The reflector's worker-thread entry point, loaded by piscina from the compiled build
 * (dist/workers/reflector.worker.js; see src/kubernetes/reflector-worker/script-path.ts). Each piscina task is
 * one reflector stream: network, JSON decoding and validation all happen on this thread.
 */
import { preloadClientNode } from '../src/kubernetes/client/connection.js';
import type { ReflectorTask } from '../src/kubernetes/reflector-worker/protocol.js';
import { runReflectorTask } from '../src/kubernetes/reflector-worker/worker-thread-task.js';

// Load the Kubernetes client while the thread is idle, so the first stream does not wait for it.
preloadClientNode();

export default function reflectorWorker(task: ReflectorTask) {
  return runReflectorTask(task);
}
