/**
 * The partial Pod view: only the fields this project reads, validated at the edge.
 *
 * Validating here (in the reflector's worker thread) means a wrongly typed field is one clear
 * error at the boundary instead of an `undefined` deep inside a cell view, and dropping every
 * field we do not read is what keeps the cache small: a pod as the API server sends it is ~5 KB,
 * most of it `managedFields` and container specs we never look at.
 */
import { z } from 'zod';

/** `null` and absent maps read as `{}`: the API server omits empty maps, clients spell them null. */
const stringMap = z
  .record(z.string(), z.string())
  .nullish()
  .transform((value) => value ?? {});

/** `null` and absent lists read as `[]`, for the same reason as maps. */
function list<S extends z.ZodType>(item: S) {
  return z
    .array(item)
    .nullish()
    .transform((value) => value ?? []);
}

const optionalString = z
  .string()
  .nullish()
  .transform((value) => value ?? undefined);

const containerPortSchema = z.object({
  name: optionalString,
  containerPort: z.number().int(),
  protocol: optionalString,
});

const containerSchema = z.object({
  name: z.string(),
  ports: list(containerPortSchema),
});

const containerStateSchema = z
  .object({
    waiting: z
      .object({ reason: optionalString, message: optionalString })
      .nullish()
      .transform((value) => value ?? undefined),
    running: z
      .object({ startedAt: optionalString })
      .nullish()
      .transform((value) => value ?? undefined),
    terminated: z
      .object({
        exitCode: z.number().int(),
        reason: optionalString,
        message: optionalString,
        startedAt: optionalString,
        finishedAt: optionalString,
      })
      .nullish()
      .transform((value) => value ?? undefined),
  })
  .nullish()
  .transform((value) => value ?? undefined);

const containerStatusSchema = z.object({
  name: z.string(),
  ready: z
    .boolean()
    .nullish()
    .transform((value) => value ?? false),
  restartCount: z.number().int(),
  state: containerStateSchema,
  lastState: containerStateSchema,
});

const podConditionSchema = z.object({
  type: z.string(),
  status: z.string(),
  reason: optionalString,
  message: optionalString,
  lastTransitionTime: optionalString,
});

export const podSchema = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: z
      .string()
      .nullish()
      .transform((value) => value ?? ''),
    uid: z.string(),
    resourceVersion: optionalString,
    deletionTimestamp: optionalString,
    labels: stringMap,
    annotations: stringMap,
  }),
  spec: z
    .object({
      nodeName: optionalString,
      subdomain: optionalString,
      nodeSelector: stringMap,
      schedulingGates: list(z.object({ name: z.string() })),
      containers: list(containerSchema),
    })
    .nullish()
    .transform(
      (value) => value ?? { nodeSelector: {}, schedulingGates: [], containers: [] as Container[] },
    ),
  status: z
    .object({
      phase: optionalString,
      podIP: optionalString,
      conditions: list(podConditionSchema),
      containerStatuses: list(containerStatusSchema),
    })
    .nullish()
    .transform((value) => value ?? { conditions: [], containerStatuses: [] }),
});

/** A pod as this project sees it: the validated, trimmed view. Plain data, structured-clonable. */
export type Pod = z.output<typeof podSchema>;
export type Container = z.output<typeof containerSchema>;
export type ContainerStatus = z.output<typeof containerStatusSchema>;
export type PodCondition = z.output<typeof podConditionSchema>;

/** Why a value is not a readable pod, in one line naming the offending fields. */
export class MalformedPodError extends Error {
  override readonly name = 'MalformedPodError';
}

/**
 * Validates and trims one pod. Throws `MalformedPodError` for a pod missing name, uid or a
 * container's restartCount, or with a wrongly typed field: such a pod cannot be attributed or
 * reasoned about, and guessing would publish a wrong world.
 */
export function parsePod(value: unknown): Pod {
  const result = podSchema.safeParse(value);
  if (!result.success) {
    const where = result.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '<root>'}: ${issue.message}`)
      .join('; ');
    throw new MalformedPodError(`malformed pod: ${where}`);
  }
  return result.data;
}

/** The store key of a pod: `namespace/name`, client-go's `MetaNamespaceKeyFunc`. */
export function podKey(pod: Pod): string {
  return pod.metadata.namespace
    ? `${pod.metadata.namespace}/${pod.metadata.name}`
    : pod.metadata.name;
}
