/**
 * The reflector's worker-thread entry point, loaded by piscina from the compiled build
 * (dist/workers/reflector.worker.cjs, bundled as CommonJS; see src/kubernetes/reflector-worker/script-path.ts). Each piscina task is
 * one reflector stream: network, JSON decoding and validation all happen on this thread.
 */
import { preloadClientNode } from '../src/kubernetes/client/connection.js';
import type { ReflectorTask } from '../src/kubernetes/reflector-worker/protocol.js';
import {
  type ReflectorTaskResult,
  runReflectorTask,
} from '../src/kubernetes/reflector-worker/worker-thread-task.js';

// Load the Kubernetes client while the thread is idle, so the first stream does not wait for it.
preloadClientNode();

/**
 * Piscina calls the default export once per task; it runs one reflector stream until the main side
 * closes it or it fails, and its promise is what the main thread's `WorkerEventStream` waits on.
 */
export default function reflectorWorker(task: ReflectorTask): Promise<ReflectorTaskResult> {
  return runReflectorTask(task);
}
