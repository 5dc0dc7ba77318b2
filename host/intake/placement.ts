import type { Signal } from './normalise.ts';

/** Where an alert was placed: its service (null: unplaced, grouped under `unknown`), by which rule, and whether that is certain or a match. */
export interface Placed {
  service: string | null;
  rule: string;
  certain: boolean;
  /** Why it is unplaced although it named a service (a probe of an address no service has). */
  why?: string;
}

/**
 * Names the service of each alert taken in (the estate's resolver). `ready` runs once per push
 * or poll before any `resolve`, so a resolver can make sure its index is current without a
 * query per alert.
 */
export interface ServiceResolver {
  ready?(): Promise<void>;
  resolve(signal: Signal): Placed;
}

/** Without an estate: the alert's own `service`, as the normaliser read it. */
export const OWN_SERVICE: ServiceResolver = {
  resolve: (s) => ({ service: s.service, rule: s.service === null ? 'none' : 'service', certain: s.service !== null }),
};

/** The signals with the service the resolver names (the fingerprint stays the one the alert brought). */
export async function place(resolver: ServiceResolver, signals: Signal[]): Promise<Signal[]> {
  if (resolver === OWN_SERVICE || signals.length === 0) return signals;
  await resolver.ready?.();
  return signals.map((s) => {
    const placed = resolver.resolve(s);
    if (placed.service === s.service && placed.why === undefined) return s;
    return { ...s, service: placed.service, ...(placed.why === undefined ? {} : { unplaced: placed.why }) };
  });
}
