import { needsBy, type Me } from './api.ts';

/**
 * "Your name" for changes made without a person signed in (the admin token's break-glass
 * session): asked once, in the break-glass banner (`YourName.svelte`), and remembered for the
 * tab in sessionStorage (gone when the tab closes, like the session). Every change that needs
 * it (`by` in the API: halt, resume, autonomy) takes it from here, so a page never asks twice.
 */
const KEY = 'oncall.by';

function stored(): string {
  try {
    return sessionStorage.getItem(KEY) ?? '';
  } catch {
    return '';
  }
}

export const signer = $state({ name: stored() });

export function rememberName(name: string): void {
  signer.name = name;
  try {
    if (name.trim() === '') sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, name);
  } catch {
    // Private mode without storage: kept for this page only.
  }
}

/** The field's id, so a refused change can move focus to it. */
export const YOUR_NAME_ID = 'your-name';

/**
 * The `by` to send: undefined when a person is signed in (the server records their e-mail);
 * the remembered name otherwise, or an Error asking for it (and focus moves to the field).
 */
export function byFor(me: Me | null): string | undefined {
  if (!needsBy(me)) return undefined;
  const name = signer.name.trim();
  if (name === '') {
    document.getElementById(YOUR_NAME_ID)?.focus();
    throw new Error(
      'Enter your name in “Your name” at the top of the page first: no person is signed in with the admin token, so each change records who made it.',
    );
  }
  return name;
}
