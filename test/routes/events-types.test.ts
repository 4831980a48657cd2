import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { closeAll, harness } from '../support/service-harness.js';

afterEach(closeAll);

async function publishedPattern(): Promise<RegExp> {
  const doc = parse(await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'));
  const parameter = doc.paths['/api/v1/events'].get.parameters.find(
    (p: { name: string }) => p.name === 'types',
  );
  return new RegExp(parameter.schema.pattern);
}

describe('GET /api/v1/events?types=', () => {
  it('publishes the exact pattern it accepts: known types, commas, spaces, empty entries', async () => {
    const pattern = await publishedPattern();
    for (const ok of ['cell.changed', ' cell.changed , store.synced ', ',,', 'events.dropped,']) {
      expect(pattern.test(ok), ok).toBe(true);
    }
    for (const bad of ['cell.exploded', '\tcell.changed', 'cell.changed\n', 'cellXchanged']) {
      expect(pattern.test(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('answers 400 for what the pattern rejects, naming an unknown type', async () => {
    const { app } = await harness({});
    const unknown = await app.inject({ url: '/api/v1/events?types=cell.exploded' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().message).toContain('unknown event type "cell.exploded"');
    const tab = await app.inject({
      url: `/api/v1/events?types=${encodeURIComponent('\tcell.changed')}`,
    });
    expect(tab.statusCode).toBe(400);
    expect(tab.json().message).toContain('separated by commas');
  });
});
