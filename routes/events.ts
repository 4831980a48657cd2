/**
 * `GET /api/v1/events`: the controller's event bus as Server-Sent Events — cell changes, watch
 * state, leadership, the coordinator's reconciliations and phases, sink changes. What a person
 * runs through `kubectl port-forward` to watch the controller think:
 * `curl -N localhost:8080/api/v1/events?types=cell.changed,reconciliation.completed`.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ControlPlane } from '../src/service/control-plane.js';
import { commonErrors } from './schemas.js';

/** One message of the stream: every event the service sends has all three fields. */
export const sseEventSchema = z.looseObject({
  id: z.string().describe('Position of the event on this connection.'),
  event: z.string().describe('The event type, e.g. `cell.changed`.'),
  data: z.string().describe('The event itself, as JSON.'),
});

export interface EventsRoutesOptions {
  plane: ControlPlane;
  /** The event types a client may ask for, for `?types=` validation. */
  eventTypes: readonly string[];
}

export const eventsRoutes: FastifyPluginAsyncZod<EventsRoutesOptions> = async (
  app,
  { plane, eventTypes },
) => {
  const known = new Set([...eventTypes, 'events.dropped']);
  // What `types` accepts, exactly: known types separated by commas, spaces around them allowed,
  // empty entries ignored. The same pattern is published in the schema, so a client (or a fuzzer)
  // knows beforehand which values are valid.
  const alternatives = [...known].map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  const pattern = `^ *(?:${alternatives})? *(?:, *(?:${alternatives})? *)*$`;
  const split = (text: string): string[] =>
    text
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
  const typesQuery = z
    .string()
    .regex(new RegExp(pattern), {
      error: (issue) => {
        const text = String(issue.input);
        const unknown = split(text).filter((t) => !known.has(t));
        return unknown.length > 0
          ? `unknown event type ${unknown.map((t) => JSON.stringify(t)).join(', ')}; known: ${[...known].join(', ')}`
          : `event types must be separated by commas (spaces allowed), got ${JSON.stringify(text)}; known: ${[...known].join(', ')}`;
      },
    })
    .transform(split)
    .describe(`Comma-separated event types to receive (default: all): ${[...known].join(', ')}.`)
    .optional();

  app.get(
    '/api/v1/events',
    {
      schema: {
        summary: 'Event stream (SSE)',
        description:
          'Server-Sent Events: each message has `id`, `event: <type>` and `data: <json>`. A comment line every 15 s keeps idle connections open. A client that falls behind loses the oldest events and is told how many with an `events.dropped` event. Events published before the client connected are not replayed.',
        tags: ['observability'],
        querystring: z.object({ types: typesQuery }),
        response: {
          200: {
            description: 'An endless `text/event-stream`.',
            // Per event, as a client parses the stream (what schema-aware SSE clients check);
            // `retry:` and heartbeat comment lines are not events.
            content: { 'text/event-stream': { schema: sseEventSchema } },
          },
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const closed = new AbortController();
      request.raw.once('close', () => closed.abort());
      reply.raw.once('close', () => closed.abort());
      const { types } = request.query;
      const stream = Readable.from(
        plane.eventStream({ ...(types ? { types } : {}), signal: closed.signal }),
      );
      return (
        reply
          .type('text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache, no-transform')
          .header('x-accel-buffering', 'no')
          // The connection ends with the stream: a kept-alive socket would hold the server's
          // close (and so a SIGTERM shutdown) until Fastify's 72 s keep-alive timeout.
          .header('connection', 'close')
          // The type provider types bodies from the schema; a stream is how Fastify sends one
          // that never ends (its schema only documents the media type).
          .send(stream as never)
      );
    },
  );
};
