/**
 * The shapes of the control plane's requests and responses, in zod. They validate requests, type
 * the handlers and, through @fastify/swagger, generate `openapi.yaml`.
 *
 * They do not by themselves keep responses honest: the cell endpoints send pre-serialized bodies
 * that bypass the serializer. What ties those to the schemas is test/service/cell-bodies.test.ts:
 * a type test makes `Cell` and `PoolView` equal to the schemas' output types (a field added to
 * one side only fails `npm run typecheck`), and the cached bodies are parsed against the response
 * schemas there, field for field.
 *
 * Size: every request and response schema of the API in one registry, because the OpenAPI document
 * names shared schemas across routes; each schema is short.
 */
import { z } from 'zod';

/**
 * The named schemas that become `components/schemas` in the OpenAPI document. A registry of our
 * own rather than zod's global one, so nothing else in the process can add to the contract; the
 * descriptions `.describe()` gives are copied in when the document is generated
 * (src/http/openapi-transform.ts), and test/routes/openapi.test.ts fails on a field without one.
 */
export const apiSchemas = z.registry<{ id?: string; pattern?: string; description?: string }>();

/** Registers `schema` under `id` in `apiSchemas` and returns it. */
function named<S extends z.ZodType>(schema: S, id: string): S {
  apiSchemas.add(schema, { id });
  return schema;
}

/**
 * The `source` field of every status response, so a simulated answer is never mistaken for a
 * cluster's. Spells the `SourceKind` values again (src/model/pod-source.ts), since routes import no
 * values from src/.
 */
export const sourceKindSchema = z
  .enum(['kubernetes', 'simulated'])
  .describe('Where pods come from; `simulated` means none of this is a real cluster.');

/**
 * The API's one error body (`Error` in the OpenAPI document), which every error status of every
 * route is documented with, and which src/http/app.ts's handlers produce.
 */
export const errorSchema = named(
  z.object({
    status: z.number().int().describe('The HTTP status code, repeated for clients that lose it.'),
    error: z.string().describe('The status text, e.g. `Not Found`.'),
    message: z.string().describe('What went wrong, for a person.'),
  }),
  'Error',
);

/**
 * One pod of a cell (`CellMember` in the OpenAPI document): the output type must equal
 * src/pools/cell-state.ts's `CellMember`, which test/service/cell-bodies.test.ts checks through
 * `Cell`.
 */
const cellMemberSchema = named(
  z.object({
    name: z.string().describe('The pod name.'),
    uid: z.string().describe("The pod's UID: a replaced pod of the same name has a new one."),
    phase: z
      .string()
      .nullable()
      .describe('`status.phase` (`Pending`, `Running`, …); `null` when unset.'),
    ready: z
      .boolean()
      .describe(
        'The pod counts as ready for its cell: its `Ready` condition is `True`, or, for a pod carrying the cell readiness gate, phase `Running`, `ContainersReady` `True` and every other readiness gate `True` (its own `Ready` waits for the gate).',
      ),
    podIP: z.string().nullable().describe('`status.podIP`; `null` before the pod has one.'),
    restarts: z.number().int().describe("Sum of the containers' restart counts."),
    deleting: z.boolean().describe('A deletion timestamp is set: the pod is terminating.'),
    workerIndex: z
      .number()
      .int()
      .nullable()
      .describe(
        'The position in the cell (worker-index label); `null` when the label is unreadable.',
      ),
    node: z.string().nullable().describe('`spec.nodeName`; `null` before the pod is scheduled.'),
    readinessGate: z
      .object({
        status: z.string().nullable().describe('`null` before anyone wrote the condition.'),
        reason: z.string().nullable().describe("The condition's reason; `null` when it has none."),
      })
      .nullable()
      .describe(
        "The cell readiness gate's condition on this pod (`--cell-readiness-gate`); `null` when the pod does not name it in `spec.readinessGates` or the gate is off.",
      ),
  }),
  'CellMember',
);

/**
 * One reason a cell is not alive (`NotAliveReason`); its codes must be those of
 * `NotAliveReasonCode`, held equal through the `Cell` type test.
 */
const notAliveReasonSchema = named(
  z.object({
    reason: z
      .enum([
        'PodsNotReady',
        'PodsDeleting',
        'IndicesMissing',
        'IndicesUnexpected',
        'IndicesDuplicated',
        'WorkerIndexInvalid',
        'SizeInvalid',
        'NoPods',
        'StaleMember',
      ])
      .describe(
        'Which rule keeps the cell from being alive; one entry per rule broken. `StaleMember`: a member of a LeaderWorkerSet group belongs to a previous incarnation (another leader) of the group.',
      ),
    message: z
      .string()
      .describe(
        'The same for a person, naming the pods or indices (missing indices as ranges, e.g. `1-3 and 7`); at most 16 pods or ranges, then how many more.',
      ),
    pods: z
      .array(z.string())
      .optional()
      .describe('The pods concerned, when the rule is about pods: the first 16.'),
    indices: z
      .array(z.number().int())
      .optional()
      .describe(
        'The worker indices concerned, when the rule is about indices: the first 16, ascending.',
      ),
    omitted: z
      .number()
      .int()
      .optional()
      .describe(
        'How many pods or indices the rule concerns beyond those in `pods` or `indices`; absent when none.',
      ),
  }),
  'NotAliveReason',
);

/**
 * One reason a cell is not routed to (`NotRoutableReason`); its codes must be those of
 * `NotRoutableReasonCode`, held equal through the `Cell` type test.
 */
const notRoutableReasonSchema = named(
  z.object({
    reason: z
      .enum(['NoServingPort', 'AddressInvalid', 'AddressConflict', 'NoBootstrapPort'])
      .describe(
        '`NoServingPort`: no leader, no `--port-name` container port, or no pod IP yet; `AddressInvalid`: not an IP, or loopback (unless `--sink-allow-loopback`), link-local or unspecified; `AddressConflict`: another alive cell, in any namespace, has the same address (both are left out); `NoBootstrapPort`: a cell of a prefill pool (`--sglang-router POOL=URL,role=prefill`) whose leader has no valid `--sglang-bootstrap-port-annotation` (1-65535).',
      ),
    message: z.string().describe('The same for a person, naming the address or the other cell.'),
  }),
  'NotRoutableReason',
);

/** One alive/not-alive change of a cell (`CellStateChange`), tied to the type by the `Cell` test. */
const cellStateChangeSchema = named(
  z.object({
    at: z.string().describe('RFC 3339: when the cell entered the state.'),
    alive: z.boolean().describe('The state it entered.'),
    reasons: z
      .array(z.enum(notAliveReasonSchema.shape.reason.options))
      .describe('The `whyNotAlive` codes it entered with; empty when it became alive.'),
  }),
  'CellStateChange',
);

/**
 * A published cell (`Cell` in the OpenAPI document). The cell bodies bypass the serializer, so
 * test/service/cell-bodies.test.ts ties this schema to the `Cell` type and parses the cached bodies
 * against it.
 */
export const cellSchema = named(
  z.object({
    key: z.string().describe('The reconcile key, `namespace/id`.'),
    namespace: z.string().describe("The pods' namespace."),
    pool: z.string().describe('The pool: the value of the pool label (`--pool-label`).'),
    id: z.string().describe('`<pool>-<index as 5 digits>`, or the pod name for a one-pod cell.'),
    size: z.number().int().nullable().describe('From the cell size annotation; `null` if absent.'),
    alive: z
      .boolean()
      .describe(
        'Every member is Ready, none is terminating, and the worker indices are exactly `0..size-1`.',
      ),
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
    bootstrapPort: z
      .number()
      .int()
      .nullable()
      .describe(
        "A prefill pool's cell: its leader's `--sglang-bootstrap-port-annotation`, registered with its router worker. `null` for other cells, and for a prefill cell without a valid one.",
      ),
    members: z.array(cellMemberSchema).describe('The pods of the cell, by worker index.'),
    lastTransitionTime: z
      .string()
      .describe(
        'RFC 3339: when the cell appeared or last changed aliveness, i.e. since when it has been in its state. A change of reasons, address or generation does not reset it.',
      ),
    transitions: z
      .array(cellStateChangeSchema)
      .describe(
        'The last few (at most 5) alive/not-alive changes, newest first; the appearance counts as one, and the first entry is at `lastTransitionTime`.',
      ),
  }),
  'Cell',
);

/**
 * The body of `GET /api/v1/cells`, sent as cached bytes (see `CellsView.listBody`): the envelope,
 * the store's `synced` flag, and the cells in key order.
 */
export const cellListSchema = z.object({
  source: sourceKindSchema,
  synced: z
    .boolean()
    .describe(
      'Whether the store has synced (the first full list is applied). Until it has, an empty or short list means "not synced yet", not "no cells".',
    ),
  count: z.number().int().describe('Cells in the list.'),
  cells: z.array(cellSchema).describe('The cells, sorted by key.'),
});

/** The body of `GET /api/v1/cells/{cell}`, sent as cached bytes (`CellsView.cellBody`). */
export const cellResponseSchema = z.object({ source: sourceKindSchema, cell: cellSchema });

/** One status condition of a pool's workload (`WorkloadCondition`), as the API server holds it. */
const workloadConditionSchema = named(
  z.object({
    type: z.string().describe('`Available`, `Progressing`, `UpdateInProgress`, ...'),
    status: z.string().describe('`True`, `False` or `Unknown`.'),
    reason: z.string().nullable().describe('The machine-readable reason, if given.'),
    message: z.string().nullable().describe('The sentence, if given (cut at 1024 characters).'),
    lastTransitionTime: z.string().nullable().describe('RFC 3339, if given.'),
  }),
  'WorkloadCondition',
);

/**
 * One pool's counts (`Pool` in the OpenAPI document), the serialized form of `PoolView` (counts and capacity), which
 * the same type test ties to it.
 */
export const poolSchema = named(
  z.object({
    namespace: z
      .string()
      .describe("The pool's namespace: one name in two namespaces is two pools."),
    name: z.string().describe('The value of the pool label.'),
    cells: z.number().int().describe('Cells of the pool.'),
    aliveCells: z.number().int().describe('Of those, the alive ones.'),
    pods: z.number().int().describe("Pods in the pool's cells."),
    cellIds: z.array(z.string()).describe('The ids of its cells, sorted.'),
    desiredCells: z
      .number()
      .int()
      .nullable()
      .describe(
        "The cells its workload asks for: the LeaderWorkerSet of the pool's name, its `spec.replicas`. `null` when `capacity` is `Unknown`.",
      ),
    missingCells: z
      .array(z.number().int())
      .describe(
        'Group indices below `desiredCells` with no cell at all (no pod of that group exists), ascending; each is a placeholder in `/api/v1/cells` (`whyNotAlive` `NoPods`).',
      ),
    readyReplicas: z
      .number()
      .int()
      .nullable()
      .describe(
        "The LeaderWorkerSet's own count of ready groups (`status.readyReplicas`), by its looser rule (docs/alignment.md); `null` when unknown.",
      ),
    workloadConditions: z
      .array(workloadConditionSchema)
      .describe(
        "The LeaderWorkerSet's status conditions (`Available`, `Progressing`, `UpdateInProgress`).",
      ),
    capacity: z
      .enum(['Full', 'Degraded', 'Empty', 'Unknown'])
      .describe(
        '`Full`: alive cells ≥ `desiredCells`; `Degraded`: some alive, fewer than desired; `Empty`: none alive, some desired; `Unknown`: no LeaderWorkerSet of that name, or its API is not served, not permitted or not watched (`capacityReason` says which): the pool is judged by its cells alone.',
      ),
    capacitySince: z
      .string()
      .describe('RFC 3339: since when `capacity` has held, as this replica saw it.'),
    capacityReason: z.string().describe('Why the pool is in its capacity state, for a person.'),
  }),
  'Pool',
);

/** The body of `GET /api/v1/pools`. */
export const poolListSchema = z.object({
  source: sourceKindSchema,
  count: z.number().int().describe('Pools in the list.'),
  pools: z.array(poolSchema).describe('The pools, sorted by namespace and name.'),
});

/** The body of `GET /api/v1/pools/{pool}`. */
export const poolResponseSchema = z.object({
  source: sourceKindSchema,
  pool: poolSchema,
  cells: z.array(cellSchema).describe("The pool's cells, sorted by key."),
});

/**
 * One pod as `GET /api/v1/store?objects=true` shows it (`PodView`): the member view, so the store
 * and the cells describe a pod alike.
 */
const podViewSchema = named(
  cellMemberSchema.extend({
    key: z.string().describe('The store key, `namespace/name`.'),
    namespace: z.string().describe("The pod's namespace."),
    resourceVersion: z
      .string()
      .nullable()
      .describe('The version of the pod the store holds, as the API server issued it.'),
  }),
  'PodView',
);

/** The body of `GET /api/v1/store`: what the store observes per parent, reconciled or not. */
export const storeSchema = z.object({
  source: sourceKindSchema,
  synced: z.boolean().describe('The first full list has been applied.'),
  objects: z.number().int().describe('Pods in the store.'),
  parentCount: z.number().int().describe('Parents (cell keys) with members in the store.'),
  parents: z
    .array(
      z.object({
        key: z.string().describe('The parent key, `namespace/id`.'),
        reconciled: z
          .boolean()
          .describe(
            'A cell for this key is published; `false` means its first reconcile is pending.',
          ),
        members: z.array(z.string()).describe('Store keys of the members, sorted.'),
        pods: z.array(podViewSchema).optional().describe('Only with `?objects=true`.'),
      }),
    )
    .describe('Every parent, sorted by key.'),
});

/** The body of `GET /api/v1/queue`: the loop's clock times already turned into ages and delays. */
export const queueSchema = z.object({
  source: sourceKindSchema,
  synced: z.boolean().describe('The first full list has been applied.'),
  depth: z.number().int().describe('Keys waiting for a reconcile.'),
  queued: z.array(z.string()).describe('Keys waiting, oldest first.'),
  inFlight: z
    .object({
      key: z.string().describe('The key.'),
      runningForMs: z.number().int().describe('How long its reconcile has run (monotonic).'),
    })
    .nullable()
    .describe('The key being reconciled now, if any.'),
  retries: z
    .array(
      z.object({
        key: z.string().describe('The key.'),
        failures: z.number().int().describe('Failed reconciles in a row.'),
        dueInMs: z
          .number()
          .int()
          .nullable()
          .describe('When it is queued again, from now; `null` once it has been.'),
      }),
    )
    .describe('Keys backing off after a failed reconcile (exponential, per key).'),
  nextResyncInMs: z
    .number()
    .int()
    .nullable()
    .describe('`null` when resync is off or not yet running.'),
});

/**
 * The body of `GET /api/v1/reflector`: the source's `PodSourceStats` with absent values as `null`.
 * No type test ties it to `PodSourceStats` yet, so a field added there must be added here by hand.
 */
export const reflectorSchema = z.object({
  source: sourceKindSchema,
  phase: z
    .enum(['idle', 'listing', 'watching', 'backoff', 'stopped'])
    .describe("Where the reflector's state machine is."),
  healthy: z
    .boolean()
    .describe(
      'The pod watch is healthy (what `/readyz` checks): a WATCH that proved itself (a change or bookmark, open a second, or a watch-list whose initial events ended), or a synced source recovering for under 30 s.',
    ),
  cursor: z.string().nullable().describe('The resourceVersion the next watch resumes from.'),
  lists: z
    .number()
    .int()
    .describe('Whole-world reads completed: LISTs, and watch-lists whose initial events ended.'),
  relists: z
    .record(z.string(), z.number().int())
    .describe('Relists by reason (`expired`, `list-failed`, …), after the first sync.'),
  watchOpens: z.number().int().describe('WATCH requests sent, accepted or not.'),
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
  initialEventsTimeouts: z
    .number()
    .int()
    .describe(
      'Of those, watch-lists whose `k8s.io/initial-events-end` bookmark did not come within 10 s of the last initial event (a server or proxy that strips it): each fell back to LIST + WATCH.',
    ),
  stalledWatches: z
    .number()
    .int()
    .describe(
      "WATCHes replaced because no whole frame came for 125 s (two of the API server's minute-long bookmark intervals) once it had sent a bookmark; readiness falls until the new WATCH proves itself.",
    ),
  events: z
    .record(z.string(), z.number().int())
    .describe('Watch frames by type: ADDED, MODIFIED, DELETED, BOOKMARK, ERROR, OTHER.'),
  droppedEvents: z
    .record(z.string(), z.number().int())
    .describe(
      'Watch frames and LIST items read but not applied, by reason: `stale`, older than the cursor or the pod copy already read (resourceVersions compared as KEP-5504 says); a run of them relists (`relists.regression`); `out-of-scope`, a pod outside the watched namespace, or a pod the label selector does not select (listed or upserted; a delete is always applied).',
    ),
  lastEventAt: z
    .string()
    .nullable()
    .describe('RFC 3339: when the last pod event (or list) arrived; `null` before the first.'),
  lastSyncAt: z
    .string()
    .nullable()
    .describe('RFC 3339: when the last full list (first sync or relist) was applied.'),
  bytesDecoded: z.number().int().describe('Bytes of LIST and WATCH bodies read, after gzip.'),
  lastError: z
    .string()
    .nullable()
    .describe('The last failure, one line, never quoting credentials; `null` before one.'),
  listProgress: z
    .object({
      pages: z.number().int().describe('Pages read and validated so far.'),
      pods: z.number().int().describe('Pods in those pages.'),
      startedAt: z.string().describe('RFC 3339: when this LIST began.'),
    })
    .nullable()
    .describe('The LIST under way (a first sync or a relist); `null` when not listing.'),
});

/**
 * The 202 body of both forced-reconcile POSTs: the keys just queued (a key already queued is listed
 * too; the queue absorbed it).
 */
export const requeueSchema = z.object({
  source: sourceKindSchema,
  count: z.number().int().describe('Keys queued.'),
  queued: z.array(z.string()).describe('The keys queued for a reconcile, sorted.'),
});

/**
 * `:cell`, the id users see: the path parameter of every route about one cell, so reading a cell
 * and requeueing it take the same id.
 */
export const cellParams = z.object({
  cell: z.string().min(1).describe('The cell id, e.g. `engine-00003`.'),
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

/** The body of `GET /api/v1/leader`: the service's `LeadershipView`. */
export const leaderSchema = z.object({
  source: sourceKindSchema,
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

/**
 * The desired routing state (`RoutingState` in the OpenAPI document), as the coordinator renders it
 * for the sinks.
 */
export const routingStateSchema = named(
  z.object({
    pools: z
      .array(
        z.object({
          namespace: z.string().describe("The pool's namespace."),
          pool: z.string().describe('The pool name.'),
          cells: z
            .array(
              z.object({
                cell: z.string().describe('The cell id.'),
                generation: z.string().describe("The cell's generation, as in `Cell`."),
                address: z.string().describe('`host:port` of the cell leader.'),
                bootstrapPort: z
                  .number()
                  .int()
                  .optional()
                  .describe("A prefill pool's cell: the bootstrap port its router worker gets."),
              }),
            )
            .describe("The pool's alive, routable cells, sorted by address."),
          capacity: z
            .object({
              routable: z.number().int().describe('Cells alive and routable.'),
              known: z.number().int().describe('Every cell of the pool, alive or not.'),
              thresholdPercent: z.number().describe('`--sink-panic-threshold`.'),
              panic: z
                .boolean()
                .describe(
                  '`routable` is under `thresholdPercent` of `known`: the sinks remove nothing from this pool (they still add).',
                ),
            })
            .optional()
            .describe('Present when `--sink-panic-threshold` is set (above 0).'),
        }),
      )
      .describe(
        'Every pool with at least one cell (its list may be empty), sorted by namespace and name.',
      ),
  }),
  'RoutingState',
);

/**
 * The body of `GET /api/v1/coordinator`: the coordinator's run state and the desired routing state.
 */
export const coordinatorSchema = z.object({
  source: sourceKindSchema,
  leading: z.boolean().describe('This replica holds the Lease (or leads alone).'),
  acting: z
    .boolean()
    .describe('The coordinator runs: this replica leads and the cells have synced.'),
  cellsSynced: z
    .boolean()
    .describe('The initial list is applied and every cell in it was reconciled once.'),
  state: z
    .object({
      running: z.boolean().describe('A run (render, validate, deploy) is under way.'),
      runningId: z.number().int().nullable().describe('Its id; `null` when none runs.'),
      pendingReasons: z
        .array(z.string())
        .describe('Why the next run will happen (cell changes, drift, retry), collapsed into one.'),
      consecutiveFailures: z.number().int().describe('Failed runs in a row.'),
      nextRetryAt: z
        .string()
        .nullable()
        .describe('RFC 3339: when the retry after a failed run begins; `null` when none is due.'),
      nextRetryInMs: z
        .number()
        .int()
        .nullable()
        .describe('The same as a delay from now (monotonic, immune to clock steps).'),
      lastCompleted: z
        .object({
          id: z.number().int().describe('The run id, counting from 1.'),
          result: resultSchema.describe('How it ended.'),
          at: z.string().describe('RFC 3339: when the run ended.'),
          agoMs: z.number().int().describe('How long ago it ended (monotonic).'),
        })
        .nullable()
        .describe('The last run that ended; `null` before the first.'),
      lastError: z
        .object({
          phase: phaseSchema.describe('The phase that failed.'),
          message: z.string().describe('Its error, for a person.'),
        })
        .nullable()
        .describe('The last failure, until the next success.'),
    })
    .describe("The coordinator's run state."),
  desired: routingStateSchema
    .nullable()
    .describe(
      "The leader's last rendered desired state; on a follower rendered locally and never deployed. `null` before the cells have synced.",
    ),
});

const sinkModeSchema = z
  .enum(['apply', 'observe'])
  .describe('`--sink-mode`: `observe` reads every target and writes nothing (a dry run).');

/** The body of `GET /api/v1/sinks`: the sink settings and each target's status (`SinkTarget`). */
export const sinksSchema = z.object({
  source: sourceKindSchema,
  mode: sinkModeSchema,
  panicThresholdPercent: z.number().describe('`--sink-panic-threshold`; 0: panic is off.'),
  panic: z
    .array(
      z.object({
        namespace: z.string().describe("The pool's namespace."),
        pool: z.string().describe('The pool name.'),
        routable: z.number().int().describe('Cells alive and routable when it entered.'),
        known: z.number().int().describe('Every cell of the pool when it entered.'),
        thresholdPercent: z.number().describe('`--sink-panic-threshold`.'),
        since: z.string().describe('RFC 3339: when the pool entered panic.'),
      }),
    )
    .describe(
      "The pools in panic at the leader's last deploy: fewer than the threshold's share of their cells are alive and routable, so their sinks remove nothing (they still add). Empty on a follower.",
    ),
  sinks: z
    .array(
      named(
        z.object({
          kind: z
            .enum(['sglang-router', 'endpointslice', 'readiness-gate', 'epp-endpoints-file'])
            .describe('Which sink the target is of.'),
          target: z
            .string()
            .describe(
              'The router URL, the EndpointSlice `namespace/name`, or the `namespace/pool` whose gated pods the readiness gate writes.',
            ),
          pool: z.string().describe('The pool whose cells it receives.'),
          role: z
            .enum(['prefill', 'decode'])
            .optional()
            .describe(
              "A prefill/decode router's pool (`--sglang-router POOL=URL,role=…`): this target is the router's workers of that type. Absent for a plain router, whose whole list is the pool's.",
            ),
          desired: z
            .array(z.string())
            .describe(
              'Sorted: `http://host:port` (router), `ip:port` (slice) or `pod=Status/Reason` (readiness gate).',
            ),
          actual: z
            .array(z.string())
            .describe(
              "Sorted: the target's list as read at the end of the last apply that reached it, after that apply's adds and removes were sent (a router add still being processed is in `pending` until a later read lists it); empty before the first read.",
            ),
          pending: z
            .array(
              z.object({
                operation: z.enum(['add', 'remove']).describe('What was sent.'),
                endpoint: z.string().describe('The endpoint it was sent for.'),
                since: z.string().describe('RFC 3339: when it was sent.'),
                reason: z
                  .string()
                  .optional()
                  .describe(
                    'A router add the router did not take: why its answer was not believed (a 409 without a worker id for a URL it does not list, an add it never lists). Absent for a change in progress.',
                  ),
                retryAt: z
                  .string()
                  .optional()
                  .describe(
                    'RFC 3339: with `reason`, the add is not sent again before then (1 s doubling per URL, capped as `backoffUntil`); a run begins at that time.',
                  ),
              }),
            )
            .describe(
              'Changes sent but not yet visible on the target (a router add in progress), and router adds the router did not take (with `reason`).',
            ),
          lastAppliedAt: z
            .string()
            .nullable()
            .describe('RFC 3339 of the last apply without error.'),
          lastError: z
            .string()
            .nullable()
            .describe(
              "The last apply's error for this target, or the router adds it did not take (see `pending`); `null` after a clean success.",
            ),
          backoffUntil: z
            .string()
            .nullable()
            .describe(
              'RFC 3339: its last call failed, and it is not called again before then, however many runs begin (1 s doubling, capped at the drift interval or 60 s); a run begins at that time. `null`: it may be called now.',
            ),
          mode: sinkModeSchema,
          wouldAdd: z
            .array(z.string())
            .describe(
              'Observe mode: what apply would add, from the last read (sorted); empty in apply mode.',
            ),
          wouldRemove: z
            .array(z.string())
            .describe(
              'Observe mode: what apply would remove, ownership and panic honoured (sorted); empty in apply mode.',
            ),
          panic: z.boolean().describe("The target's pool is in panic: nothing is removed from it."),
          heldByPanic: z
            .array(z.string())
            .describe('Listed, not desired, and kept only because the pool is in panic (sorted).'),
          unmarked: z
            .array(z.string())
            .optional()
            .describe(
              'A router only: listed, not desired, at a URL this process added, but without the controller\'s mark (the router dropped or rewrote its labels), so `managed` ownership does not remove it (sorted). Also `pool_controller_sink_workers{state="unmarked"}`.',
            ),
          ownership: z
            .object({
              mode: z
                .enum(['managed', 'all'])
                .describe(
                  '`managed`: only endpoints the sink marked (or recorded adding) are removed; `all`: any it does not desire (`--sglang-router-ownership`).',
                ),
              by: z
                .enum(['labels', 'record', 'field-manager'])
                .nullable()
                .describe(
                  "`labels`: the target keeps the sink's mark (router worker labels, the EndpointSlice managed-by label); `record`: the router lists no labels, so the URLs this process added are what it owns; `field-manager`: the readiness gate owns its one pod condition by server-side apply; `null`: not known yet, or `all`.",
                ),
            })
            .describe('Which endpoints of the target the sink may remove, and how it tells them.'),
        }),
        'SinkTarget',
      ),
    )
    .describe('Every target of every sink.'),
});

/**
 * What each 2xx body is, in words: the description of its response in the OpenAPI document (a
 * generator shows it on the method; without one @fastify/swagger writes "Default Response").
 * Registered where `.describe()` would put it, without re-declaring the schemas.
 */
const RESPONSE_DESCRIPTIONS: ReadonlyArray<readonly [z.ZodType, string]> = [
  [cellListSchema, 'The reconciled cells, in key order, and whether the store has synced.'],
  [cellResponseSchema, 'The cell.'],
  [poolListSchema, 'The pools with their cell, alive-cell and pod counts.'],
  [poolResponseSchema, 'The pool and its cells.'],
  [storeSchema, 'The store as observed: members per parent, pod views with `objects=true`.'],
  [queueSchema, 'The work queue: queued keys, the one in flight, retries, the next resync.'],
  [reflectorSchema, "The pod source's state and counters."],
  [requeueSchema, 'Accepted: the keys queued for a reconcile.'],
  [leaderSchema, "This replica's identity, whether it leads, the observed leader and the Lease."],
  [coordinatorSchema, "The coordinator's state and the desired routing state."],
  [sinksSchema, 'Every sink target: desired, actual and pending workers; the guard rails.'],
];
for (const [schema, description] of RESPONSE_DESCRIPTIONS) {
  z.globalRegistry.add(schema, { description });
}
