import { describe, expect, it } from 'vitest';
import type { ApiStatus } from '../../src/kubernetes/client/api-errors.js';
import {
  classifyFailure,
  describeFailure,
  type ReflectorAction,
  type ReflectorFailure,
  type RequestPhase,
} from '../../src/kubernetes/reflector/reflector-failure.js';

function status(fields: Partial<ApiStatus>, inStream = false): ReflectorFailure {
  return { kind: 'status', status: { causes: [], ...fields }, inStream };
}

const backoff = { kind: 'backoff' } as const;
const relist = (reason: string, wait: object = backoff) => ({ kind: 'relist', reason, wait });
const reconnect = (wait: object = backoff) => ({ kind: 'reconnect', wait });

const rows: Array<[string, RequestPhase, ReflectorFailure, ReflectorAction | object]> = [
  // A dead cursor, as a response or as an in-stream ERROR frame.
  ['WATCH answered 410', 'watch', status({ code: 410 }), relist('expired')],
  ['ERROR frame code 410', 'watch', status({ code: 410 }, true), relist('expired')],
  [
    'ERROR frame reason Expired, no code',
    'watch',
    status({ reason: 'Expired' }, true),
    relist('expired'),
  ],
  [
    'ERROR frame reason Gone',
    'watch',
    status({ code: 500, reason: 'Gone' }, true),
    relist('expired'),
  ],
  ['WATCH answered 504', 'watch', status({ code: 504 }), relist('too-large')],
  [
    'ERROR frame code 504',
    'watch',
    status({ code: 504, reason: 'Timeout' }, true),
    relist('too-large'),
  ],
  [
    'ERROR frame with a ResourceVersionTooLarge cause',
    'watch',
    status({ code: 500, causes: ['ResourceVersionTooLarge'] }, true),
    relist('too-large'),
  ],
  [
    'reason ResourceVersionTooLarge alone is not read',
    'watch',
    status({ code: 500, reason: 'ResourceVersionTooLarge' }),
    reconnect(),
  ],
  // Other refusals keep the cursor.
  [
    'WATCH answered 429 with Retry-After',
    'watch',
    status({ code: 429, retryAfterMs: 5_000 }),
    reconnect({ kind: 'backoff', atLeastMs: 5_000 }),
  ],
  ['WATCH answered 429 without Retry-After', 'watch', status({ code: 429 }), reconnect()],
  ['WATCH answered 403', 'watch', status({ code: 403, reason: 'Forbidden' }), reconnect()],
  // Any other ERROR frame: the same cursor would fail the same way forever, so relist (client-go).
  [
    'ERROR frame code 500 InternalError',
    'watch',
    status({ code: 500, reason: 'InternalError' }, true),
    relist('error-frame'),
  ],
  ['ERROR frame code 403', 'watch', status({ code: 403 }, true), relist('error-frame')],
  ['ERROR frame that is no Status at all', 'watch', status({}, true), relist('error-frame')],
  [
    'ERROR frame 500 with Retry-After',
    'watch',
    status({ code: 500, retryAfterMs: 4_000 }, true),
    relist('error-frame', { kind: 'backoff', atLeastMs: 4_000 }),
  ],
  [
    'ERROR frame reason TooManyRequests, no code',
    'watch',
    status({ reason: 'TooManyRequests' }, true),
    reconnect(),
  ],
  // A non-2xx response to the WATCH is a refusal to open, not a stream failing at its cursor.
  ['WATCH answered 500', 'watch', status({ code: 500 }), reconnect()],
  [
    'ERROR frame asking to retry after 2 s',
    'watch',
    status({ code: 429, retryAfterMs: 2_000 }, true),
    reconnect({ kind: 'backoff', atLeastMs: 2_000 }),
  ],
  // Frames.
  [
    'pod frame unreadable, with a version',
    'watch',
    { kind: 'malformed-pod', resourceVersion: '17', message: 'm' },
    { kind: 'skip', advanceTo: '17' },
  ],
  [
    'pod frame unreadable, no version',
    'watch',
    { kind: 'malformed-pod', message: 'm' },
    relist('malformed-frame'),
  ],
  [
    'frame not an object or not JSON',
    'watch',
    { kind: 'malformed-frame', message: 'm' },
    relist('malformed-frame'),
  ],
  // The connection.
  [
    'connection dropped after the server answered',
    'watch',
    { kind: 'connection', message: 'reset', answered: true },
    reconnect(),
  ],
  [
    'connection refused, or reset before any answer',
    'watch',
    { kind: 'connection', message: 'ECONNREFUSED', answered: false },
    reconnect({ kind: 'unanswered' }),
  ],
  ['idle for too long', 'watch', { kind: 'idle', idleMs: 1 }, reconnect()],
  [
    'no whole frame for two bookmark intervals',
    'watch',
    { kind: 'stalled', stallMs: 1 },
    reconnect(),
  ],
  ['clean end (server timeout)', 'watch', { kind: 'ended' }, reconnect({ kind: 'none' })],
  [
    'clean end within a second, no frame (very short watch)',
    'watch',
    { kind: 'short-watch', lastedMs: 5, frames: 0 },
    reconnect(),
  ],
  [
    'clean end within a second after frames: still a short watch, no hot loop',
    'watch',
    { kind: 'short-watch', lastedMs: 5, frames: 3 },
    reconnect(),
  ],
  [
    'frames older than the cursor, again and again (the history went back)',
    'watch',
    { kind: 'regression', cursor: '500', resourceVersion: '400', frames: 8 },
    relist('regression'),
  ],
  // LIST: whatever happened, list again.
  [
    'LIST answered 410 (continue token expired)',
    'list',
    status({ code: 410 }),
    relist('list-failed'),
  ],
  [
    'LIST answered 429 with Retry-After',
    'list',
    status({ code: 429, retryAfterMs: 9_000 }),
    relist('list-failed', { kind: 'backoff', atLeastMs: 9_000 }),
  ],
  [
    'LIST with an unreadable item',
    'list',
    { kind: 'malformed-list', message: 'm' },
    relist('list-failed'),
  ],
  [
    'LIST connection refused',
    'list',
    { kind: 'connection', message: 'ECONNREFUSED', answered: false },
    relist('list-failed', { kind: 'unanswered' }),
  ],
  [
    'LIST body broke off midway',
    'list',
    { kind: 'connection', message: 'aborted', answered: true },
    relist('list-failed'),
  ],
  ['LIST idle', 'list', { kind: 'idle', idleMs: 1 }, relist('list-failed')],
];

describe('classifyFailure', () => {
  it.each(rows)('%s → the row action', (_, phase, failure, action) => {
    expect(classifyFailure(phase, failure)).toEqual(action);
  });
});

describe('classifyFailure with a cursor a WATCH proved live', () => {
  const proven = { cursorProven: true };

  it.each<[string, ReflectorFailure]>([
    ['WATCH answered 410', status({ code: 410 })],
    ['ERROR frame 410 Expired', status({ code: 410, reason: 'Expired' }, true)],
    ['ERROR frame reason Gone', status({ code: 500, reason: 'Gone' }, true)],
  ])('%s → relist at once', (_, failure) => {
    expect(classifyFailure('watch', failure, proven)).toEqual(relist('expired', { kind: 'none' }));
  });

  it('still backs off before relisting a cursor from the future (504)', () => {
    expect(classifyFailure('watch', status({ code: 504 }), proven)).toEqual(relist('too-large'));
  });

  it('backs off before relisting an expiry that met the first WATCH after a LIST', () => {
    expect(classifyFailure('watch', status({ code: 410 }), { cursorProven: false })).toEqual(
      relist('expired'),
    );
  });

  it('changes nothing for a LIST', () => {
    expect(classifyFailure('list', status({ code: 410 }), proven)).toEqual(relist('list-failed'));
  });
});

describe('describeFailure', () => {
  it.each<[ReflectorFailure, string]>([
    [
      status({ code: 410, reason: 'Expired', message: 'too old resource version: 1 (5)' }, true),
      'ERROR frame 410 Expired: too old resource version: 1 (5)',
    ],
    [status({ code: 503 }), 'HTTP 503'],
    [{ kind: 'malformed-pod', resourceVersion: '9', message: 'bad' }, 'bad (at resourceVersion 9)'],
    [{ kind: 'idle', idleMs: 300_000 }, 'no bytes from the API server for 300000 ms'],
    [
      { kind: 'stalled', stallMs: 125_000 },
      'no whole watch frame from the API server for 125000 ms (it sends a bookmark about every minute)',
    ],
    [{ kind: 'ended' }, 'watch ended by the server'],
    [
      { kind: 'short-watch', lastedMs: 12, frames: 0 },
      'watch ended by the server after 12 ms without a single frame',
    ],
    [
      { kind: 'short-watch', lastedMs: 12, frames: 2 },
      'watch ended by the server after 12 ms (2 frames)',
    ],
    [
      { kind: 'regression', cursor: '500', resourceVersion: '400', frames: 8 },
      '8 watch frames in a row older than the cursor 500 (the last at resourceVersion 400)',
    ],
  ])('says %j in one line', (failure, line) => {
    expect(describeFailure(failure)).toBe(line);
  });
});
