/**
 * `GET /api/v1/events`: the controller's event bus as Server-Sent Events — cell changes, watch
 * state, leadership, the coordinator's reconciliations and phases, sink changes. What a person
 * runs through `kubectl port-forward` to watch the controller think:
 * `curl -N localhost:8080/api/v1/events?types=cell.changed,reconciliation.completed`.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { eventTypesPattern, parseEventTypes } from './event-types-query.js';
import { commonErrors, documentedPattern, errorSchema } from './schemas.js';

/**
 * `Retry-After` seconds on the 503 beyond the stream cap: a few reconnect intervals (the
 * stream's `retry:` is 2 s), so clients waiting for a slot do not hammer the server.
 */
const EVENTS_RETRY_AFTER_S = 10;

/** Why a stream's signal aborts: its client went away. */
const CLIENT_GONE = new Error('the client closed the event stream');

/** One message of the stream: every event the service sends has all three fields. */
const sseEventSchema = z.looseObject({
  id: z
    .string()
    .describe(
      '`<epoch>-<sequence>`: the epoch is random per process, the sequence counts every event the process published. What a client sends back as `Last-Event-ID`.',
    ),
  event: z.string().describe('The event type, e.g. `cell.changed`.'),
  data: z
    .string()
    .describe(
      'The event itself, as JSON, with its `type` and its `time` (RFC 3339, when it was published).',
    ),
});

/**
 * `Last-Event-ID`: any text. One this process did not send (another replica's, an earlier run's,
 * or none of ours at all) is answered in the stream with `events.missed` (`missed: null`), never
 * with a 400: `EventSource` sends the header by itself on every reconnect and stops reconnecting
 * for good on any answer but 200. The value is parsed in linear time and never quoted back.
 */
const lastEventIdHeader = z.string().optional();

/**
 * `?lastEventId=`: a parameter of ours, so checked like every other (400 for a value that is not
 * an id as the stream writes them: 8 hex digits, `-`, a decimal below 2^53). Anchored and
 * without nested repetition, so linear on any input.
 */
const lastEventIdQuery = z
  .string()
  .regex(/^[0-9a-f]{8}-(0|[1-9][0-9]{0,14})$/, {
    error:
      "lastEventId must be an event id as the stream writes them (8 hex digits, '-', a number)",
  })
  .optional();

/**
 * The plugin's options: the control plane, and the event types `?types=` may name (the service
 * passes `SERVICE_EVENT_TYPES`, kept apart so this file imports no value from src/).
 */
interface EventsRoutesOptions {
  plane: ControlPlane;
  /** The event types a client may ask for, for `?types=` validation. */
  eventTypes: readonly string[];
}

/**
 * Registers `GET /api/v1/events`. Beyond `maxEventStreams` open streams it answers 503 with
 * `Retry-After`, and each stream's connection closes with it, so streams can never take the
 * connections other clients need.
 */
export const eventsRoutes: FastifyPluginAsyncZod<EventsRoutesOptions> = async (
  app,
  { plane, eventTypes },
) => {
  const known = new Set([...eventTypes, 'events.dropped', 'events.missed']);
  // Parsed by hand in one pass (event-types-query.ts), never by a backtracking regular
  // expression: the value is client input of any length. The pattern is only published, so a
  // client (or a fuzzer) knows beforehand which values are valid.
  const typesQuery = documentedPattern(z.string(), eventTypesPattern(known))
    .transform((text, ctx) => {
      const parsed = parseEventTypes(text, known);
      if (parsed.ok) return parsed.types;
      ctx.addIssue({ code: 'custom', message: parsed.message, input: text });
      return z.NEVER;
    })
    .describe(`Comma-separated event types to receive (default: all): ${[...known].join(', ')}.`)
    .optional();

  app.get(
    '/api/v1/events',
    {
      schema: {
        operationId: 'streamEvents',
        summary: 'Event stream (SSE)',
        description:
          "Server-Sent Events: each message has `id`, `event: <type>` and `data: <json>`, the JSON with the event's `time` (RFC 3339). A comment line every 15 s keeps idle connections open. The last events (up to 1,024 and 512 KiB) are kept: a client that reconnects with `Last-Event-ID` (as `EventSource` does by itself) first receives the events of its `types` it missed; when they are no longer all kept, or the id is not of this process (another replica, a restart), it first receives an `events.missed` event (`missed`: how many events, of any type, are lost; `null` when unknown) and should reread the state. A client that falls behind by more than 1 MiB loses the oldest events and is told how many with an `events.dropped` event. At most `--max-event-streams` streams are open at once; beyond, 503 with `Retry-After`.",
        tags: ['observability'],
        headers: z.object({
          'last-event-id': lastEventIdHeader.describe(
            'The `id` of the last event received: the stream resumes after it. An id this process did not send is answered with `events.missed` (`missed: null`).',
          ),
        }),
        querystring: z.object({
          types: typesQuery,
          lastEventId: lastEventIdQuery.describe(
            "As the `Last-Event-ID` header, for a first connection (a browser's `EventSource` cannot set the header); the header wins when both are given.",
          ),
        }),
        response: {
          200: {
            description: 'An endless `text/event-stream`.',
            // Per event, as a client parses the stream (what schema-aware SSE clients check);
            // `retry:` and heartbeat comment lines are not events.
            content: { 'text/event-stream': { schema: sseEventSchema } },
          },
          503: errorSchema,
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const closed = new AbortController();
      // One reason for every stream: without one, each abort builds a DOMException and its stack.
      const abort = (): void => closed.abort(CLIENT_GONE);
      request.raw.once('close', abort);
      reply.raw.once('close', abort);
      const { types } = request.query;
      const lastEventId = request.headers['last-event-id'] ?? request.query.lastEventId;
      const stream = plane.eventStream({
        ...(types ? { types } : {}),
        signal: closed.signal,
        ...(lastEventId !== undefined ? { lastEventId } : {}),
      });
      if (stream === undefined) {
        request.raw.off('close', abort);
        reply.raw.off('close', abort);
        return reply
          .code(503)
          .header('retry-after', String(EVENTS_RETRY_AFTER_S))
          .send({
            status: 503,
            error: 'Service Unavailable',
            message: `${plane.maxEventStreams} event streams are open, the most this server keeps (--max-event-streams); retry later`,
          });
      }
      return (
        reply
          .type('text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache, no-transform')
          .header('x-accel-buffering', 'no')
          // The connection ends with the stream: a kept-alive socket would hold the server's
          // close (and so a SIGTERM shutdown) until the 65 s keep-alive timeout
          // (`SERVER_TIMEOUTS.keepAliveMs` in src/http/app.ts).
          .header('connection', 'close')
          // The type provider types bodies from the schema; a stream is how Fastify sends one
          // that never ends (its schema only documents the media type).
          .send(stream as never)
      );
    },
  );
};
