// A project that installed the packed tarball: plain JavaScript importing the package by its
// name, with a ReconcileLoop over a kind of its own — build jobs grouped by queue, not pods —
// fed by a hand-written Source. Copied into a fresh temporary project by installed-package.test.ts
// and run there with Node; prints one line per reconciled queue, then "done".
import { ReconcileLoop } from 'pool-controller';

const jobs = [
  { name: 'compile-1', queue: 'ci', state: 'running' },
  { name: 'compile-2', queue: 'ci', state: 'queued' },
  { name: 'nightly-1', queue: 'nightly', state: 'queued' },
];

// Resolved by reconcile: after both queues were seen once, and after the third reconcile.
let sawBothQueues;
let sawThird;
const bothQueuesSeen = new Promise((resolve) => {
  sawBothQueues = resolve;
});
const thirdSeen = new Promise((resolve) => {
  sawThird = resolve;
});

// Opens with the whole world, then one job finishes (is deleted) and the stream stays open.
async function* jobSource() {
  yield { type: 'replace', objects: new Map(jobs.map((job) => [job.name, job])) };
  await bothQueuesSeen;
  yield { type: 'delete', key: 'compile-1' };
  await new Promise(() => {});
}

const lines = [];
const loop = new ReconcileLoop({
  source: jobSource,
  keyMap: (job) => job.queue,
  reconcile: async (queue) => {
    const members = loop
      .getByParent(queue)
      .map((job) => `${job.name}=${job.state}`)
      .sort();
    lines.push(`${queue}: ${members.join(' ') || '(empty)'}`);
    if (lines.length === 2) sawBothQueues();
    if (lines.length === 3) sawThird();
  },
});

await loop.start();
await thirdSeen;
await loop.stop();
console.log(lines.slice(0, 2).sort().concat(lines.slice(2)).join('\n'));
console.log('done');
