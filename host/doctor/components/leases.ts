/** The leases component of doctor: which host process holds which lease now (docs/operations.md, "Leases"). */
import { hostname } from 'node:os';
import type { Lease } from '../../schedule/lease.model.ts';
import { part, type Part } from '../part.ts';

/** What doctor reads of the leases: those live now. */
export type LeasesSeen = Lease[];

const SHOWN = 12;

/** `web-1:4242` from a holder named `<host>:<pid>:<kind>:<random>`; an older holder name stays whole. */
function processOf(holder: string): string {
  const parts = holder.split(':');
  return parts.length >= 3 ? `${parts[0]}:${parts[1]}` : holder;
}

export function describeLeases(seen: LeasesSeen): Part {
  if (seen.length === 0) return part('ok', 'no lease is held now (each is taken while its work runs)');
  const here = `${hostname()}:${process.pid}`;
  const byProcess = new Map<string, string[]>();
  for (const l of seen) {
    const p = processOf(l.holder);
    byProcess.set(p, [...(byProcess.get(p) ?? []), l.name]);
  }
  const words = [...byProcess]
    .sort(([a], [b]) => (a === here ? -1 : b === here ? 1 : a.localeCompare(b)))
    .map(([p, names]) => `${p === here ? `this host (${p})` : p}: ${names.slice(0, SHOWN).join(', ')}${names.length > SHOWN ? ', …' : ''}`);
  return part('ok', `held now by ${words.join('; ')}`);
}
