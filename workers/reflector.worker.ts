/**
 * The reflector's worker-thread entry point, loaded by piscina from the compiled build
 * (dist/workers/reflector.worker.cjs, bundled as CommonJS; see src/kubernetes/reflector-worker/script-path.ts). Each piscina task is
 * one reflector stream: network, JSON decoding and validation all happen on this thread.
 */
import type { ReflectorTask } from '../src/kubernetes/reflector-worker/protocol.js';
import {
  type ReflectorTaskResult,
  runReflectorTask,
} from '../src/kubernetes/reflector-worker/worker-thread-task.js';

// client-node is not loaded here: the first request of a stream goes out with the settings the
// main thread resolved (`ReflectorTask.firstRequest`), and the thread loads client-node after its
// first sync (worker-thread-task.ts). Loading it here put ~11 ms on the path to the first request.

/**
 * Piscina calls the default export once per task; it runs one reflector stream until the main side
 * closes it or it fails, and its promise is what the main thread's `WorkerEventStream` waits on.
 */
export default function reflectorWorker(task: ReflectorTask): Promise<ReflectorTaskResult> {
  return runReflectorTask(task);
}
