/**
 * The bootstrap port of a prefill cell: where a decode engine fetches the KV cache a prefill engine
 * computed (SGLang's `--disaggregation-bootstrap-port`). A router in prefill/decode mode hands it
 * to the decode side with every request, so a prefill worker registered without it (or with a
 * wrong one) accepts requests whose decode half can never finish.
 *
 * The port is read from an annotation of the cell's leader pod, the key smg's own Kubernetes
 * discovery reads, so one pod template serves both. It is parsed strictly: a value that is not
 * one port keeps the cell out of the router with a reason, rather than registering a guess.
 */

/**
 * smg's own key (its `--bootstrap-port-annotation` default): pods annotated for smg's discovery
 * need no second annotation for this controller.
 */
export const DEFAULT_BOOTSTRAP_PORT_ANNOTATION = 'sglang.ai/bootstrap-port';

/** A port is 1..65535; five digits at most, so a long text is refused before any arithmetic. */
const PORT_PATTERN = /^[1-9][0-9]{0,4}$/;
const MAX_PORT = 65_535;

/** The port of one annotation value, or why it is not one. */
type BootstrapPortReading = { port: number } | { port: undefined; problem: 'missing' | 'invalid' };

/**
 * `value` as a bootstrap port: exactly the decimal digits of 1..65535, nothing around them (no
 * sign, space, leading zero or list). smg also takes a comma-separated list, one port per data
 * port of a multi-port pod; a cell has one serving port, so it has one bootstrap port.
 */
export function parseBootstrapPort(value: string | undefined): BootstrapPortReading {
  if (value === undefined) return { port: undefined, problem: 'missing' };
  if (!PORT_PATTERN.test(value)) return { port: undefined, problem: 'invalid' };
  const port = Number(value);
  return port <= MAX_PORT ? { port } : { port: undefined, problem: 'invalid' };
}
