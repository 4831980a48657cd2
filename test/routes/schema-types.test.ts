/**
 * Each response schema (the source of openapi.yaml and of the responses' serialization) is tied to
 * the type the service hands its route: a field added to one and not the other fails
 * `npm run typecheck` here, so the published document cannot drift from what is sent. (The cell
 * and pool schemas are tied in test/service/cell-bodies.test.ts, beside their cached bodies.)
 *
 * Where a route maps its type to the wire (an absent field sent as `null`, a partial record
 * filled with zeros) the test ties the field names, and the route's handler, typed by
 * fastify-type-provider-zod, ties each value to the schema.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type {
  coordinatorSchema,
  leaderSchema,
  reflectorSchema,
  routingStateSchema,
  sinksSchema,
  sourceKindSchema,
} from '../../routes/schemas.js';
import type { SourceKind } from '../../src/model/pod-source.js';
import type { InitialListMode, PodSourceStats } from '../../src/model/pod-source-stats.js';
import type {
  CoordinatorView,
  LeadershipView,
  RoutingState,
  SinkSettingsView,
  SinkTargetStatus,
} from '../../src/service/control-plane.js';

/** The API shows epoch times as RFC 3339 under the name without `Ms` (`lastSyncAtMs` → `lastSyncAt`). */
type AsRfc3339<K> = K extends `${infer Name}AtMs` ? `${Name}At` : K;

describe('response schemas and the types they serialize', () => {
  it('names the same source kinds', () => {
    expectTypeOf<z.output<typeof sourceKindSchema>>().toEqualTypeOf<SourceKind>();
  });

  it('describes every field of the reflector stats', () => {
    expectTypeOf<keyof z.output<typeof reflectorSchema>>().toEqualTypeOf<
      AsRfc3339<keyof PodSourceStats> | 'source'
    >();
    // routes/ may import only types, so the schema spells the modes; this ties it to the model's list.
    expectTypeOf<
      z.output<typeof reflectorSchema>['initialList']
    >().toEqualTypeOf<InitialListMode>();
  });

  it('describes the leadership view, with the source every status response carries', () => {
    type Leader = z.output<typeof leaderSchema>;
    expectTypeOf<Omit<Leader, 'source'>>().toEqualTypeOf<LeadershipView>();
    expectTypeOf<Leader['source']>().toEqualTypeOf<SourceKind>();
  });

  it('describes the coordinator view and the routing state', () => {
    expectTypeOf<z.output<typeof routingStateSchema>>().toEqualTypeOf<RoutingState>();
    type Coordinator = z.output<typeof coordinatorSchema>;
    expectTypeOf<keyof Coordinator>().toEqualTypeOf<keyof CoordinatorView | 'source'>();
    // A clock time is shown as RFC 3339 and as the wait from now (`nextRetryInMs`).
    expectTypeOf<keyof Coordinator['state']>().toEqualTypeOf<
      AsRfc3339<keyof CoordinatorView['state']> | 'nextRetryInMs'
    >();
  });

  it('describes each sink target and the sink settings', () => {
    type Sinks = z.output<typeof sinksSchema>;
    expectTypeOf<Sinks['sinks'][number]>().toEqualTypeOf<SinkTargetStatus>();
    expectTypeOf<Omit<Sinks, 'source' | 'sinks'>>().toEqualTypeOf<SinkSettingsView>();
  });
});
