import { describe, expect, it } from 'vitest';
import {
  type HealthCheck,
  HealthEndpoint,
  runChecks,
  runOneCheck,
} from '../../src/service/health.js';

const ok = (name: string): HealthCheck => ({ name, check: () => undefined });
const bad = (name: string, why = 'broken'): HealthCheck => ({ name, check: () => why });

describe("health checks in controller-runtime's format", () => {
  it('answers ok, or every line with ?verbose', () => {
    expect(runChecks('healthz', [ok('a'), ok('b')], { verbose: false, exclude: [] })).toEqual({
      status: 200,
      body: 'ok',
    });
    expect(runChecks('healthz', [ok('a'), ok('b')], { verbose: true, exclude: [] }).body).toBe(
      '[+]a ok\n[+]b ok\nhealthz check passed\n',
    );
  });

  it('is always verbose on failure and never shows the reason', () => {
    expect(
      runChecks('readyz', [ok('a'), bad('b', 'secret detail')], { verbose: false, exclude: [] }),
    ).toEqual({
      status: 500,
      body: '[+]a ok\n[-]b failed: reason withheld\nreadyz check failed\n',
    });
  });

  it('reports exclusions and unmatched exclusions', () => {
    const res = runChecks('readyz', [bad('a')], { verbose: true, exclude: ['a', 'zz', 'b'] });
    expect(res).toEqual({
      status: 200,
      body: '[+]a excluded: ok\nwarn: some health checks cannot be excluded: no matches for "b","zz"\nreadyz check passed\n',
    });
  });

  it('withholds the reason for a single check too, handing it to the failure hook', () => {
    const heard: string[] = [];
    const hook = (endpoint: string, check: string, reason: string) =>
      heard.push(`${endpoint}/${check}: ${reason}`);
    expect(runOneCheck(bad('a', 'token: s3cret'), hook, 'readyz')).toEqual({
      status: 500,
      body: 'internal server error: reason withheld\n',
    });
    expect(runOneCheck(ok('a'), hook, 'readyz')).toEqual({ status: 200, body: 'ok' });
    expect(heard).toEqual(['readyz/a: token: s3cret']);
  });
});

describe('HealthEndpoint (what the control plane hands the routes)', () => {
  const readyz = new HealthEndpoint('readyz', [ok('a'), bad('b', 'not synced')]);

  it('names its checks and reports them under its own name', () => {
    expect(readyz.checkNames).toEqual(['a', 'b']);
    expect(readyz.report({ verbose: false, exclude: [] })).toEqual({
      status: 500,
      body: '[+]a ok\n[-]b failed: reason withheld\nreadyz check failed\n',
    });
    expect(readyz.report({ verbose: false, exclude: ['b'] })).toEqual({ status: 200, body: 'ok' });
  });

  it('reports one check by name, and nothing for a name it does not have', () => {
    expect(readyz.reportOne('b')).toEqual({
      status: 500,
      body: 'internal server error: reason withheld\n',
    });
    expect(readyz.reportOne('zz')).toBeUndefined();
    expect(readyz.failureReason('b')).toBe('not synced');
    expect(readyz.failureReason('a')).toBeUndefined();
  });

  it('hands every failed reason to its hook, from the full report and from one check', () => {
    const heard: string[] = [];
    const endpoint = new HealthEndpoint('readyz', [bad('b', 'why')], (e, c, r) =>
      heard.push(`${e}/${c}: ${r}`),
    );
    endpoint.report({ verbose: false, exclude: [] });
    endpoint.reportOne('b');
    expect(heard).toEqual(['readyz/b: why', 'readyz/b: why']);
  });
});
