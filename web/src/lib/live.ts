import { api } from './api.ts';

/**
 * Calls `fn` when the ledger head moves (every change is a ledger event), checking every second
 * while the page is visible and at once when it becomes visible again: one small status read,
 * whatever the number of watchers. Returns the function that stops watching.
 */
const watchers = new Set<() => void>();
let lastSeq: number | null = null;
let timer: ReturnType<typeof setInterval> | null = null;
async function checkHead(): Promise<void> {
  if (document.visibilityState !== 'visible') return;
  try {
    const head = await api.ledgerHead();
    const moved = lastSeq !== null && head.seq !== lastSeq;
    lastSeq = head.seq;
    if (moved) for (const fn of [...watchers]) fn();
  } catch {
    // The next check tries again; pages show their own errors.
  }
}
function onVisible(): void {
  if (document.visibilityState === 'visible') void checkHead();
}
export function watchHead(fn: () => void): () => void {
  watchers.add(fn);
  if (timer === null) {
    lastSeq = null;
    void checkHead();
    timer = setInterval(() => void checkHead(), 1000);
    document.addEventListener('visibilitychange', onVisible);
  }
  return () => {
    watchers.delete(fn);
    if (watchers.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
      document.removeEventListener('visibilitychange', onVisible);
    }
  };
}
