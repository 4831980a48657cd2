import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { eventTypesPattern, parseEventTypes } from '../../routes/event-types-query.js';
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

/** Generous on purpose: a linear scan of 30,000 characters takes well under 1 ms. */
const LINEAR_SCAN_BOUND_MS = 1_000;

describe('parseEventTypes', () => {
  const known = new Set(['cell.changed', 'store.synced', 'events.dropped']);
  const samples = [
    'cell.changed',
    ' cell.changed , store.synced ',
    ',,',
    '',
    'events.dropped,',
    'cell.exploded',
    '\tcell.changed',
    'cell.changed store.synced',
    `${',  '.repeat(40)}!`,
    `${' '.repeat(50)}x`,
  ];

  it('accepts exactly what the published pattern accepts', () => {
    const pattern = new RegExp(eventTypesPattern(known));
    for (const text of samples) {
      expect(parseEventTypes(text, known).ok, JSON.stringify(text)).toBe(pattern.test(text));
    }
  });

  it('publishes a pattern a backtracking engine runs in linear time on hostile input', () => {
    const pattern = new RegExp(eventTypesPattern(known));
    // The old pattern took seconds on 127 bytes of this; backtracking on 30,000 characters would
    // not end in this test's lifetime. The bound is far above a linear scan's cost so that a busy
    // CI machine cannot fail it, and far below what any super-linear pattern would need.
    for (const text of [`${',  '.repeat(10_000)}!`, `${' '.repeat(30_000)}!`]) {
      const started = performance.now();
      expect(pattern.test(text)).toBe(false);
      expect(performance.now() - started).toBeLessThan(LINEAR_SCAN_BOUND_MS);
    }
  });

  it('quotes at most a bounded part of a long unknown value', () => {
    const parsed = parseEventTypes('x'.repeat(10_000), known);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.message.length).toBeLessThan(400);
    expect(parsed.message).toContain('(9936 more characters)');
  });
});
