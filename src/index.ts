/**
 * The package root: the controller runtime's public API (see design/RUNTIME.md), under exactly
 * the names the contract gives them.
 */
export { type Clock, realClock } from './runtime/clock.js';
export type { Logger } from './runtime/logger.js';
export type {
  KeyMap,
  ObjectKey,
  ParentKey,
  Source,
  SourceEvent,
} from './runtime/source-event.js';
