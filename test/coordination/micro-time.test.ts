import { describe, expect, it } from 'vitest';
import { formatMicroTime } from '../../src/index.js';

describe('formatMicroTime', () => {
  it('writes UTC with exactly six fractional digits and Z, as the API server writes MicroTime', () => {
    expect(formatMicroTime(new Date(Date.UTC(2026, 10, 30, 20, 41, 7, 123)))).toBe(
      '2026-11-30T20:41:07.123000Z',
    );
  });

  it('keeps leading zeros in every field, whole seconds included', () => {
    expect(formatMicroTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)))).toBe(
      '2026-01-02T03:04:05.006000Z',
    );
    expect(formatMicroTime(new Date(Date.UTC(2026, 0, 1, 0, 0, 0, 0)))).toBe(
      '2026-01-01T00:00:00.000000Z',
    );
  });

  it('is UTC whatever the local time zone of the date given', () => {
    const date = new Date('2026-06-15T12:00:00.500+02:00');
    expect(formatMicroTime(date)).toBe('2026-06-15T10:00:00.500000Z');
  });

  it('matches the shape the API server uses, so a read-back compares equal', () => {
    expect(formatMicroTime(new Date())).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });

  it('throws RangeError for an invalid date instead of writing garbage into a Lease', () => {
    expect(() => formatMicroTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
