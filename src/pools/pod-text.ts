/**
 * Bounds on the texts a pod carries into the controller's own output.
 *
 * Anyone who may create a pod writes its annotation values (up to 256 KiB in all), label values
 * and status texts, and a cell copies such texts into its why-not messages, its `cell.changed`
 * events, its transition log lines, `/api/v1/cells` and metric labels: a 200 KB annotation was
 * echoed whole into each, once per client and event. Every such text passes through here first.
 */

/**
 * 256 characters: longer than anything valid the API server lets through where we read it — a
 * label value (63), a DNS-subdomain name (253), an IP address — so real values pass whole, while
 * an annotation or a status text written to hurt is cut to a size that is harmless when copied
 * into every event, log line and response.
 */
export const MAX_POD_TEXT_LENGTH = 256;

/**
 * The longest pool label value a pod may have to be placed in a cell: Kubernetes' limit on label
 * values. The pool name becomes the cell id, the parent key and a metric label, so a longer one
 * cannot be cut (two pools would merge); such a pod is refused with an error instead.
 */
export const MAX_POOL_NAME_LENGTH = 63;

/** `text`, or its first `MAX_POD_TEXT_LENGTH` characters with how many were cut. */
export function boundPodText(text: string): string {
  if (text.length <= MAX_POD_TEXT_LENGTH) return text;
  return `${text.slice(0, MAX_POD_TEXT_LENGTH)}… (${text.length - MAX_POD_TEXT_LENGTH} more characters)`;
}

/** `boundPodText` of a text that may be absent. */
export function boundOptionalPodText(text: string | undefined): string | undefined {
  return text === undefined ? undefined : boundPodText(text);
}
