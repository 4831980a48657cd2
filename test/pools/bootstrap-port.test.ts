import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_PORT_ANNOTATION,
  parseBootstrapPort,
} from '../../src/pools/bootstrap-port.js';

describe('bootstrap port annotation', () => {
  it("defaults to smg's own key", () => {
    expect(DEFAULT_BOOTSTRAP_PORT_ANNOTATION).toBe('sglang.ai/bootstrap-port');
  });

  it('reads exactly the digits of one port in 1..65535', () => {
    expect(parseBootstrapPort('8998')).toEqual({ port: 8998 });
    expect(parseBootstrapPort('1')).toEqual({ port: 1 });
    expect(parseBootstrapPort('65535')).toEqual({ port: 65_535 });
  });

  it('tells a missing annotation from an invalid one', () => {
    expect(parseBootstrapPort(undefined)).toEqual({ port: undefined, problem: 'missing' });
    for (const value of [
      '',
      '0',
      '65536',
      '99999',
      '123456',
      '08998',
      '8998 ',
      'x',
      '89.5',
      '0x10',
    ]) {
      expect(parseBootstrapPort(value), value).toEqual({ port: undefined, problem: 'invalid' });
    }
  });

  it("refuses smg's comma-separated list: a cell has one serving port, so one bootstrap port", () => {
    expect(parseBootstrapPort('8998,8999')).toEqual({ port: undefined, problem: 'invalid' });
  });
});
