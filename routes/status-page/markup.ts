/**
 * HTML as strings, escaped: the one way the status page's renderers, on the server and in the
 * browser, turn values into markup. Every value goes through `escapeHtml` and every attribute is
 * double-quoted, so nothing from the cluster is ever parsed as HTML on either side.
 */

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text → HTML text or attribute value (double- or single-quoted). */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** An element's attributes; `null` and `undefined` leave the attribute out. */
interface Attrs {
  [name: string]: string | number | boolean | null | undefined;
}

/** An element's start tag; attribute values are escaped. */
export function startTag(tag: string, attrs: Attrs | null): string {
  const attributes = Object.entries(attrs ?? {})
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
    .join('');
  return `<${tag}${attributes}>`;
}

/** An element as HTML; attribute values are escaped, `children` are HTML already (escape values). */
export function h(tag: string, attrs: Attrs | null, ...children: string[]): string {
  return `${startTag(tag, attrs)}${children.join('')}</${tag}>`;
}

/** A `<span>` of class `cls` holding `value` as text. */
export function span(cls: string, value: unknown): string {
  return h('span', { class: cls }, escapeHtml(value));
}
