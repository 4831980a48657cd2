import { describe, expect, it } from 'vitest';
import {
  LabelSelectorError,
  labelKeyProblem,
  labelValueProblem,
  matchesLabelSelector,
  parseLabelSelector,
} from '../../src/kubernetes/resources/label-selector.js';

function problemOf(selector: string): string {
  try {
    parseLabelSelector(selector);
  } catch (err) {
    expect(err).toBeInstanceOf(LabelSelectorError);
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(selector)} to be rejected`);
}

describe('parseLabelSelector: what the API server accepts', () => {
  it('reads every operator into its requirement', () => {
    expect(
      parseLabelSelector(
        'app,!canary,tier=web,zone==a,env!=dev,size in (s,m),kind notin (x),gen>3,rank<10',
      ),
    ).toEqual([
      { key: 'app', operator: 'exists', values: [] },
      { key: 'canary', operator: '!', values: [] },
      { key: 'tier', operator: '=', values: ['web'] },
      { key: 'zone', operator: '==', values: ['a'] },
      { key: 'env', operator: '!=', values: ['dev'] },
      { key: 'size', operator: 'in', values: ['s', 'm'] },
      { key: 'kind', operator: 'notin', values: ['x'] },
      { key: 'gen', operator: '>', values: ['3'] },
      { key: 'rank', operator: '<', values: ['10'] },
    ]);
  });

  it('ignores whitespace between tokens', () => {
    expect(parseLabelSelector('  a = b ,  c in ( d , e ) , ! f ')).toEqual([
      { key: 'a', operator: '=', values: ['b'] },
      { key: 'c', operator: 'in', values: ['d', 'e'] },
      { key: 'f', operator: '!', values: [] },
    ]);
  });

  it('takes the empty value after = and inside value sets, as upstream does', () => {
    expect(parseLabelSelector('a=,b==')).toEqual([
      { key: 'a', operator: '=', values: [''] },
      { key: 'b', operator: '==', values: [''] },
    ]);
    expect(parseLabelSelector('x in (foo,,baz),y,z notin ()')).toEqual([
      { key: 'x', operator: 'in', values: ['foo', '', 'baz'] },
      { key: 'y', operator: 'exists', values: [] },
      { key: 'z', operator: 'notin', values: [''] },
    ]);
  });

  it('reads in and notin as words outside the operator position', () => {
    expect(parseLabelSelector('in in (in,notin),notin')).toEqual([
      { key: 'in', operator: 'in', values: ['in', 'notin'] },
      { key: 'notin', operator: 'exists', values: [] },
    ]);
  });

  it('accepts prefixed keys, the LeaderWorkerSet ones among them', () => {
    expect(
      parseLabelSelector(
        'leaderworkerset.sigs.k8s.io/name,leaderworkerset.sigs.k8s.io/group-index in (0,1)',
      ),
    ).toHaveLength(2);
    expect(parseLabelSelector(`${'a'.repeat(63)}=${'b'.repeat(63)}`)).toHaveLength(1);
  });

  it('parses the empty selector to no requirements', () => {
    expect(parseLabelSelector('')).toEqual([]);
  });
});

describe('parseLabelSelector: what the API server refuses, and where', () => {
  const cases: Array<[string, string]> = [
    ['a=b=c', "at character 4: expected ',' or the end after a requirement, found '='"],
    [
      'a b',
      "at character 3: expected an operator (=, ==, !=, in, notin, >, <), ',' or the end after key 'a', found 'b'",
    ],
    ['a=b c', "at character 5: expected ',' or the end after a requirement, found 'c'"],
    ['a,', "at character 3: expected a requirement after ',', found the end"],
    [',a', "at character 1: expected a label key, found ','"],
    ['a,,b', "at character 3: expected a label key, found ','"],
    ['=a', "at character 1: expected a label key, found '='"],
    ['!a=b', "at character 3: '!a' takes no operator; expected ',' or the end, found '='"],
    ['!!a', "at character 2: expected a label key, found '!'"],
    ['a===b', "at character 4: expected a value, found '='"],
    ['a=!b', "at character 3: expected a value, found '!'"],
    ['a=(b)', "at character 3: expected a value, found '('"],
    ['a in b', "at character 6: expected '(' after 'in', found 'b'"],
    ['a notin', "at character 8: expected '(' after 'notin', found the end"],
    ['a in (b c)', "at character 9: expected ',' or ')' in the value list, found 'c'"],
    ['a in (b', "at character 8: expected ',' or ')' in the value list, found the end"],
    ['a in (b,=)', "at character 9: expected ',' or ')' in the value list, found '='"],
    ['a>b', "at character 3: expected an integer after '>', found 'b'"],
    ['a<', "at character 3: expected an integer after '<', found the end"],
    ['a>-1', "at character 3: expected an integer after '>', found '-1'"],
    ['a>9223372036854775808', "at character 3: expected an integer after '>', found"],
    ['a!b', 'at character 2: expected an operator'],
    ['a)', 'at character 2: expected an operator'],
  ];
  for (const [selector, message] of cases) {
    it(`rejects ${JSON.stringify(selector)}`, () => {
      expect(problemOf(selector)).toContain(message);
    });
  }

  it('rejects keys and values outside the label grammar, naming them', () => {
    expect(problemOf('-a=b')).toContain('key "-a" has an invalid name "-a"');
    expect(problemOf('a_=b')).toContain('key "a_" has an invalid name');
    expect(problemOf(`${'k'.repeat(64)}`)).toContain('has an invalid name');
    expect(problemOf('Example.com/a')).toContain('prefix that is not a DNS subdomain');
    expect(problemOf('a/b/c')).toContain('key "a/b/c" has more than one \'/\'');
    expect(problemOf('/a')).toContain("empty prefix before '/'");
    expect(problemOf('a/')).toContain('key "a/" has an empty name');
    expect(problemOf('a=b_')).toContain('value "b_" is not a label value');
    expect(problemOf(`a=${'v'.repeat(64)}`)).toContain('is not a label value');
    expect(problemOf('a in (ok,.x)')).toContain('value ".x" is not a label value');
    expect(problemOf('é=b')).toContain('key "é" has an invalid name');
  });
});

describe('labelKeyProblem and labelValueProblem', () => {
  it('bound the prefix at 253 characters and the name at 63', () => {
    const label = 'a'.repeat(63);
    const prefix = [label, label, label, 'a'.repeat(61)].join('.'); // 253
    expect(labelKeyProblem(`${prefix}/name`)).toBeUndefined();
    expect(labelKeyProblem(`${prefix}a/name`)).toContain('not a DNS subdomain');
    expect(labelKeyProblem(`x/${'n'.repeat(63)}`)).toBeUndefined();
    expect(labelKeyProblem(`x/${'n'.repeat(64)}`)).toContain('invalid name');
  });

  it('allow the empty value and nothing else outside the name grammar', () => {
    expect(labelValueProblem('')).toBeUndefined();
    expect(labelValueProblem('a.b-c_d')).toBeUndefined();
    expect(labelValueProblem(' a')).toContain('is not a label value');
  });
});

describe('matchesLabelSelector: which labels a selector selects, as apimachinery decides', () => {
  const matches = (selector: string, labels: Record<string, string>): boolean =>
    matchesLabelSelector(parseLabelSelector(selector), labels);

  it('selects everything with the empty selector', () => {
    expect(matches('', {})).toBe(true);
    expect(matches('', { app: 'x' })).toBe(true);
  });

  it('needs the key for exists, =, == and in, and its absence for !', () => {
    expect(matches('app', { app: '' })).toBe(true);
    expect(matches('app', {})).toBe(false);
    expect(matches('!canary', {})).toBe(true);
    expect(matches('!canary', { canary: 'no' })).toBe(false);
    expect(matches('tier=web', { tier: 'web' })).toBe(true);
    expect(matches('tier==web', { tier: 'db' })).toBe(false);
    expect(matches('tier=web', {})).toBe(false);
    expect(matches('size in (s,m)', { size: 'm' })).toBe(true);
    expect(matches('size in (s,m)', { size: 'l' })).toBe(false);
    expect(matches('size in (s,m)', {})).toBe(false);
  });

  it('lets != and notin match a label that is absent', () => {
    expect(matches('env!=dev', {})).toBe(true);
    expect(matches('env!=dev', { env: 'prod' })).toBe(true);
    expect(matches('env!=dev', { env: 'dev' })).toBe(false);
    expect(matches('kind notin (x,y)', {})).toBe(true);
    expect(matches('kind notin (x,y)', { kind: 'y' })).toBe(false);
  });

  it('compares > and < as integers, and never matches a value that is not one', () => {
    expect(matches('gen>3', { gen: '10' })).toBe(true);
    expect(matches('gen>3', { gen: '3' })).toBe(false);
    expect(matches('rank<10', { rank: '9' })).toBe(true);
    expect(matches('rank<10', { rank: 'nine' })).toBe(false);
    expect(matches('rank<10', {})).toBe(false);
    expect(matches('gen>3', { gen: '99999999999999999999' })).toBe(false);
  });

  it('needs every requirement, and reads only own labels', () => {
    expect(matches('app=engine,!canary', { app: 'engine' })).toBe(true);
    expect(matches('app=engine,!canary', { app: 'engine', canary: 'yes' })).toBe(false);
    expect(matches('toString', {})).toBe(false);
  });
});
