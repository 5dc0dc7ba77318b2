/** Addresses under the connector's `base_url`. */

/** base_url joined with a path: exactly one slash between them. */
export function join(base: string, path: string): string {
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}

/** What a person is shown of an address: no query string (it may carry a key). */
export function shown(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}
