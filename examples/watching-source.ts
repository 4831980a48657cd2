/**
 * A ReconcileLoop over a watched directory of JSON files: docs/library.md's watching example,
 * runnable. `npm run build && node dist/examples/watching-source.js ./jobs` lists `./jobs/*.json`
 * (each a `{ name, queue, state }`), then follows changes through `fs.watch`, reconciling each
 * queue whenever its jobs change; it stops on SIGINT or SIGTERM and the process exits by itself.
 */
import { on } from 'node:events';
import { watch } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, ReconcileLoop, type Source, type SourceEvent } from '../src/index.js';

interface Job {
  name: string;
  queue: string;
  state: string;
}

/**
 * The job in `dir/file`; `'gone'` when the file no longer exists; `'partial'` when it is not (yet)
 * valid JSON — a writer's half-written file, whose next change event brings the rest.
 */
async function readJob(dir: string, file: string): Promise<Job | 'gone' | 'partial'> {
  let text: string;
  try {
    text = await readFile(join(dir, file), 'utf8');
  } catch {
    return 'gone';
  }
  try {
    return JSON.parse(text) as Job;
  } catch {
    return 'partial';
  }
}

// Each call opens a fresh stream: it starts watching, lists the directory (the `replace`), then
// turns every change the watch reports into an upsert or a delete of that file.
function directorySource(dir: string): Source<Job> {
  return async function* (signal): AsyncGenerator<SourceEvent<Job>> {
    // Watch before listing, so a change made meanwhile is not lost. Both end when `signal`
    // aborts: the watcher closes and the iteration below throws an AbortError.
    const watcher = watch(dir, { signal });
    const changes = on(watcher, 'change', { signal });
    const objects = new Map<string, Job>();
    for (const file of await readdir(dir)) {
      if (!file.endsWith('.json')) continue;
      const job = await readJob(dir, file);
      if (typeof job === 'object') objects.set(file, job);
    }
    yield { type: 'replace', objects };
    // A watcher error (the directory removed) ends this stream; the loop reopens a new one.
    for await (const [, filename] of changes as AsyncIterable<[string, string | null]>) {
      if (!filename?.endsWith('.json')) continue;
      const job = await readJob(dir, filename);
      if (job === 'partial') continue;
      yield job === 'gone'
        ? { type: 'delete', key: filename }
        : { type: 'upsert', key: filename, object: job };
    }
  };
}

// A console logger: every failed reconcile and reopened stream is shown (no warning needed).
const logger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (obj, msg) => console.error('warn', msg, obj),
  error: (obj, msg) => console.error('error', msg, obj),
};

await using loop = new ReconcileLoop<Job>({
  source: directorySource(process.argv[2] ?? '.'),
  keyMap: (job) => job.queue,
  reconcile: async (queue) => {
    const jobs = loop.getByParent(queue).map((job) => `${job.name}=${job.state}`);
    console.log(`${queue}: ${jobs.join(' ') || '(no jobs)'}`);
  },
  logger,
});
await loop.start();
console.log('synced');
// `await using` stops the loop when this block ends: here, once a signal asks to.
await new Promise((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
});
console.log('stopping');
