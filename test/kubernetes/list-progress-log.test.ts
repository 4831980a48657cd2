import { describe, expect, it } from 'vitest';
import {
  LIST_PROGRESS_LOG_INTERVAL_MS,
  ListProgressLog,
} from '../../src/kubernetes/reflector/list-progress-log.js';
import { RecordingLogger } from '../support/recording-logger.js';

describe('ListProgressLog: a long whole read logs its progress now and then', () => {
  it('logs nothing within the first interval, then the pages and pods so far at info', () => {
    const logger = new RecordingLogger();
    const log = new ListProgressLog(logger, 'reflector LIST in progress', 1_000);
    log.heard(1, 500, 1_000 + LIST_PROGRESS_LOG_INTERVAL_MS - 1);
    expect(logger.entries).toEqual([]);
    log.heard(2, 1_000, 1_000 + LIST_PROGRESS_LOG_INTERVAL_MS);
    expect(logger.entries).toEqual([
      {
        level: 'info',
        obj: { pages: 2, pods: 1_000, elapsedMs: LIST_PROGRESS_LOG_INTERVAL_MS },
        msg: 'reflector LIST in progress',
      },
    ]);
  });

  it('logs at most once per interval, counted from the last line', () => {
    const logger = new RecordingLogger();
    const log = new ListProgressLog(logger, 'reflector watch-list in progress', 0);
    for (let at = 0; at <= 5_000; at += 500) log.heard(at / 500, at, at);
    expect(logger.entries.map((entry) => (entry.obj as { elapsedMs: number }).elapsedMs)).toEqual([
      2_000, 4_000,
    ]);
    expect(logger.entries.every((entry) => entry.msg === 'reflector watch-list in progress')).toBe(
      true,
    );
  });
});
