/**
 * Replays the sign-in attempts of one address in ledger order against the rule (five wrong
 * passwords lock it; a right one while unlocked opens a session and starts the count again) and
 * answers where the ledger disagrees with it, or null.
 */
export function lockRuleBroken(evs: Array<{ type: string; data: any }>): string | null {
  let wrong = 0;
  let locked = false;
  for (const [i, e] of evs.entries()) {
    if (e.type === 'identity.signed_in') {
      if (locked) return `event ${i + 1}: a session opened while the address was locked`;
      wrong = 0;
    } else {
      if (e.data.locked !== locked)
        return `event ${i + 1}: checked as ${e.data.locked ? 'locked' : 'unlocked'} after ${wrong} wrong passwords (${locked ? 'locked' : 'unlocked'} by the rule)`;
      if (!locked && ++wrong === 5) locked = true;
    }
  }
  return null;
}
