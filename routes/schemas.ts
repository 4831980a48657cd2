/**
 * The shapes of the control plane's requests and responses, in zod. They validate requests, type
 * the handlers and, through @fastify/swagger, generate `openapi.yaml`.
 *
 * They do not by themselves keep responses honest: the cell endpoints send pre-serialized bodies
 * that bypass the serializer. What ties those to the schemas is test/service/cell-bodies.test.ts:
 * a type test makes `Cell` and `PoolSummary` equal to the schemas' output types (a field added to
 * one side only fails `npm run typecheck`), and the cached bodies are parsed against the response
 * schemas there, field for field.
 */
import { z } from 'zod';

/**
 * The named schemas that become `components/schemas` in the OpenAPI document. A registry of our
 * own rather than zod's global one, so nothing else in the process can add to the contract.
 */
export const apiSchemas = z.registry<{ id?: string; pattern?: string }>();

/** Registers `schema` under `id` in `apiSchemas` and returns it. */
function named<S extends z.ZodType>(schema: S, id: string): S {
  apiSchemas.add(schema, { id });
  return schema;
}

export const sourceKindSchema = z
  .enum(['kubernetes', 'simulated'])
  .describe('Where pods come from; `simulated` means none of this is a real cluster.');

export const errorSchema = named(
  z.object({
    status: z.number().int().describe('The HTTP status code, repeated for clients that lose it.'),
    error: z.string().describe('The status text, e.g. `Not Found`.'),
    message: z.string().describe('What went wrong, for a person.'),
  }),
  'Error',
);

export const cellMemberSchema = named(
  z.object({
    name: z.string(),
    uid: z.string(),
    phase: z.string().nullable(),
    ready: z.boolean().describe("The pod's `Ready` condition is `True`."),
    podIP: z.string().nullable(),
    restarts: z.number().int().describe("Sum of the containers' restart counts."),
    deleting: z.boolean().describe('A deletion timestamp is set: the pod is terminating.'),
    workerIndex: z.number().int().nullable().describe('`null` when the label is unreadable.'),
    node: z.string().nullable(),
  }),
  'CellMember',
);

export const notAliveReasonSchema = named(
  z.object({
    reason: z.enum([
      'PodsNotReady',
      'PodsDeleting',
      'IndicesMissing',
      'IndicesUnexpected',
      'IndicesDuplicated',
      'WorkerIndexInvalid',
      'SizeInvalid',
    ]),
    message: z.string(),
    pods: z.array(z.string()).optional(),
    indices: z.array(z.number().int()).optional(),
  }),
  'NotAliveReason',
);

export const notRoutableReasonSchema = named(
  z.object({
    reason: z
      .enum(['NoServingPort', 'AddressInvalid', 'AddressConflict'])
      .describe(
        '`NoServingPort`: no leader, no `--port-name` container port, or no pod IP yet; `AddressInvalid`: not an IP, or loopback (unless `--sink-allow-loopback`), link-local or unspecified; `AddressConflict`: another alive cell, in any namespace, has the same address (both are left out).',
      ),
    message: z.string(),
  }),
  'NotRoutableReason',
);

export const cellSchema = named(
  z.object({
    key: z.string().describe('The reconcile key, `namespace/id`.'),
    namespace: z.string(),
    pool: z.string(),
    id: z.string().describe('`<pool>-<index as 5 digits>`, or the pod name for a one-pod cell.'),
    size: z.number().int().nullable().describe('From the cell size annotation; `null` if absent.'),
    alive: z.boolean(),
    whyNotAlive: z.array(notAliveReasonSchema).describe('Empty exactly when `alive`.'),
    generation: z
      .string()
      .describe('16 hex digits; changes on a replaced pod, a container restart or a termination.'),
    leader: z.string().nullable().describe('The worker-index-0 pod.'),
    address: z
      .string()
      .nullable()
      .describe('`leaderIP:port` of the `--port-name` port, the IP in canonical form.'),
    routable: z
      .boolean()
      .describe(
        'The address may be routed to; independent of `alive`. A cell is in every sink exactly when it is alive and routable; the other cells and pools deploy regardless.',
      ),
    whyNotRoutable: z.array(notRoutableReasonSchema).describe('Empty exactly when `routable`.'),
    members: z.array(cellMemberSchema),
    lastTransitionTime: z.string().describe('When the cell appeared or last changed aliveness.'),
  }),
  'Cell',
);

export const cellListSchema = z.object({
  source: sourceKindSchema,
  synced: z
    .boolean()
    .describe(
      'Whether the store has synced (the first full list is applied). Until it has, an empty or short list means "not synced yet", not "no cells".',
    ),
  count: z.number().int(),
  cells: z.array(cellSchema),
});

export const cellResponseSchema = z.object({ source: sourceKindSchema, cell: cellSchema });

export const poolSchema = named(
  z.object({
    namespace: z.string(),
    name: z.string(),
    cells: z.number().int(),
    aliveCells: z.number().int(),
    pods: z.number().int(),
    cellIds: z.array(z.string()),
  }),
  'Pool',
);

export const poolListSchema = z.object({
  source: sourceKindSchema,
  count: z.number().int(),
  pools: z.array(poolSchema),
});

export const poolResponseSchema = z.object({
  source: sourceKindSchema,
  pool: poolSchema,
  cells: z.array(cellSchema),
});

export const podViewSchema = named(
  cellMemberSchema.extend({
    key: z.string().describe('The store key, `namespace/name`.'),
    namespace: z.string(),
    resourceVersion: z
      .string()
      .nullable()
      .describe('The version of the pod the store holds, as the API server issued it.'),
  }),
  'PodView',
);

export const storeSchema = z.object({
  source: sourceKindSchema,
  synced: z.boolean().describe('The first full list has been applied.'),
  objects: z.number().int().describe('Pods in the store.'),
  parentCount: z.number().int(),
  parents: z.array(
    z.object({
      key: z.string(),
      reconciled: z
        .boolean()
        .describe(
          'A cell for this key is published; `false` means its first reconcile is pending.',
        ),
      members: z.array(z.string()).describe('Store keys of the members, sorted.'),
      pods: z.array(podViewSchema).optional().describe('Only with `?objects=true`.'),
    }),
  ),
});

export const queueSchema = z.object({
  source: sourceKindSchema,
  synced: z.boolean(),
  depth: z.number().int(),
  queued: z.array(z.string()).describe('Keys waiting, oldest first.'),
  inFlight: z
    .object({ key: z.string(), runningForMs: z.number() })
    .nullable()
    .describe('The key being reconciled now, if any.'),
  retries: z.array(
    z.object({
      key: z.string(),
      failures: z.number().int(),
      dueInMs: z.number().nullable().describe('`null` once the retry has been queued.'),
    }),
  ),
  nextResyncInMs: z.number().nullable().describe('`null` when resync is off or not yet running.'),
});

export const reflectorSchema = z.object({
  source: sourceKindSchema,
  phase: z.enum(['idle', 'listing', 'watching', 'backoff', 'stopped']),
  healthy: z
    .boolean()
    .describe(
      'The pod watch is healthy (what `/readyz` checks): a WATCH that proved itself (a change or bookmark, open a second, or a watch-list whose initial events ended), or a synced source recovering for under 30 s.',
    ),
  cursor: z.string().nullable().describe('The resourceVersion the next watch resumes from.'),
  lists: z.number().int(),
  relists: z.record(z.string(), z.number().int()),
  watchOpens: z.number().int(),
  initialList: z
    .enum(['watch-list', 'list'])
    .describe(
      'How the whole world is read (first sync, relists): one WATCH with the initial events, or LIST then WATCH. `list` after a fallback.',
    ),
  watchListFallbacks: z
    .number()
    .int()
    .describe(
      'Watch-list attempts that fell back to a LIST (the server refused it, or it failed).',
    ),
  events: z.record(z.string(), z.number().int()),
  lastEventAt: z
    .string()
    .nullable()
    .describe('RFC 3339: when the last pod event (or list) arrived; `null` before the first.'),
  lastSyncAt: z
    .string()
    .nullable()
    .describe('RFC 3339: when the last full list (first sync or relist) was applied.'),
  bytesDecoded: z.number().int(),
  lastError: z.string().nullable(),
  listProgress: z
    .object({
      pages: z.number().int().describe('Pages read and validated so far.'),
      pods: z.number().int().describe('Pods in those pages.'),
      startedAt: z.string().describe('RFC 3339: when this LIST began.'),
    })
    .nullable()
    .describe('The LIST under way (a first sync or a relist); `null` when not listing.'),
});

export const requeueSchema = z.object({
  source: sourceKindSchema,
  count: z.number().int(),
  queued: z.array(z.string()).describe('The keys queued for a reconcile, sorted.'),
});

/** `?namespace=`: picks one cell or pool when the same id exists in several namespaces. */
export const namespaceQuery = z
  .string()
  .min(1)
  .describe('Disambiguates an id that exists in more than one namespace.')
  .optional();

/** `true`/`false` only: `alive=maybe` is a 400, not a silent "no filter". */
export function booleanQuery(name: string) {
  return z
    .enum(['true', 'false'], {
      error: (issue) => `${name} must be true or false, got ${JSON.stringify(issue.input)}`,
    })
    .transform((v) => v === 'true');
}

/**
 * `schema` documented with `pattern` in the OpenAPI document without zod running it: for values
 * a hand-written linear parser validates (client input must never meet a backtracking regular
 * expression), while clients and fuzzers still learn which values are valid.
 */
export function documentedPattern<S extends z.ZodType>(schema: S, pattern: string): S {
  apiSchemas.add(schema, { pattern });
  return schema;
}

/** Error responses every route can give, for the OpenAPI document. */
export const commonErrors = { 400: errorSchema, 500: errorSchema } as const;

export const leaderSchema = z.object({
  identity: z
    .string()
    .describe("This replica's identity: `$POD_NAME` (or the hostname), `_`, a random suffix."),
  leading: z.boolean().describe('This replica holds the Lease (or leads alone, without one).'),
  leader: z.string().nullable().describe('The observed holder of the Lease; `null` when none.'),
  lease: z
    .string()
    .nullable()
    .describe(
      '`namespace/name` of the Lease; `null` when there is none (simulated source, `--leader-elect=false`).',
    ),
  since: z
    .string()
    .nullable()
    .describe('RFC 3339: when this replica began leading; `null` while it does not.'),
});

const phaseSchema = z.enum(['render', 'validate', 'deploy']);
const resultSchema = z.enum(['success', 'failure', 'aborted']);

export const routingStateSchema = named(
  z.object({
    pools: z.array(
      z.object({
        namespace: z.string(),
        pool: z.string(),
        cells: z
          .array(
            z.object({
              cell: z.string(),
              generation: z.string(),
              address: z.string().describe('`host:port` of the cell leader.'),
            }),
          )
          .describe("The pool's alive cells with an address, sorted by address."),
      }),
    ),
  }),
  'RoutingState',
);

export const coordinatorSchema = z.object({
  source: sourceKindSchema,
  leading: z.boolean(),
  acting: z
    .boolean()
    .describe('The coordinator runs: this replica leads and the cells have synced.'),
  cellsSynced: z.boolean(),
  state: z.object({
    running: z.boolean(),
    runningId: z.number().int().nullable(),
    pendingReasons: z.array(z.string()),
    consecutiveFailures: z.number().int(),
    nextRetryAt: z
      .string()
      .nullable()
      .describe('RFC 3339: when the retry after a failed run begins; `null` when none is due.'),
    nextRetryInMs: z
      .number()
      .nullable()
      .describe('The same as a delay from now (monotonic, immune to clock steps).'),
    lastCompleted: z
      .object({
        id: z.number().int(),
        result: resultSchema,
        at: z.string().describe('RFC 3339: when the run ended.'),
        agoMs: z.number().describe('How long ago it ended (monotonic).'),
      })
      .nullable()
      .describe('The last run that ended; `null` before the first.'),
    lastError: z
      .object({ phase: phaseSchema, message: z.string() })
      .nullable()
      .describe('The last failure, until the next success.'),
  }),
  desired: routingStateSchema
    .nullable()
    .describe(
      "The leader's last rendered desired state; on a follower rendered locally and never deployed. `null` before the cells have synced.",
    ),
});

export const sinksSchema = z.object({
  source: sourceKindSchema,
  sinks: z.array(
    named(
      z.object({
        kind: z.enum(['sglang-router', 'endpointslice']),
        target: z.string().describe('The router URL, or the EndpointSlice `namespace/name`.'),
        pool: z.string(),
        desired: z
          .array(z.string())
          .describe('Sorted: `http://host:port` (router) or `ip:port` (slice).'),
        actual: z
          .array(z.string())
          .describe(
            "Sorted: the target's list as read at the end of the last apply that reached it, after that apply's adds and removes were sent (a router add still being processed is in `pending` until a later read lists it); empty before the first read.",
          ),
        pending: z.array(
          z.object({
            operation: z.enum(['add', 'remove']),
            endpoint: z.string(),
            since: z.string(),
          }),
        ),
        lastAppliedAt: z.string().nullable().describe('RFC 3339 of the last apply without error.'),
        lastError: z.string().nullable(),
        backoffUntil: z
          .string()
          .nullable()
          .describe(
            'RFC 3339: its last call failed, and it is not called again before then, however many runs begin (1 s doubling, capped at the drift interval or 60 s); a run begins at that time. `null`: it may be called now.',
          ),
      }),
      'SinkTarget',
    ),
  ),
});
