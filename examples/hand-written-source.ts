/**
 * A ReconcileLoop driven by a hand-written Source: the README's runnable example.
 * Run it with `npm run build && node dist/examples/hand-written-source.js`.
 */
import { ReconcileLoop, type Source, type SourceEvent } from '../src/index.js';

interface Process {
  name: string;
  pool: string;
}

// A restartable source: every call opens a fresh stream that starts with the whole world.
const source: Source<Process> = async function* (signal): AsyncGenerator<SourceEvent<Process>> {
  yield {
    type: 'replace',
    objects: new Map([
      ['a-0', { name: 'a-0', pool: 'a' }],
      ['a-1', { name: 'a-1', pool: 'a' }],
    ]),
  };
  yield { type: 'upsert', key: 'b-0', object: { name: 'b-0', pool: 'b' } };
  yield { type: 'delete', key: 'a-1' };
  // Stay open until the loop is done with this stream: it aborts the stream's own signal.
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
};

const seen: string[] = [];
const loop = new ReconcileLoop<Process>({
  source,
  keyMap: (process) => process.pool,
  reconcile: async (pool) => {
    // Level-triggered: re-derive everything from the store; the event that woke us is not given.
    const members = loop.getByParent(pool).map((p) => p.name);
    seen.push(`${pool}: [${members.join(', ')}]`);
  },
});

await loop.start(); // resolves once the initial replace is in the store and queued
await new Promise((resolve) => setTimeout(resolve, 50));
await loop.stop();
console.log(seen.join('\n'));
