/**
 * Who may sign in: the access policy's rules, as pure functions (no storage, no clock). The
 * service (access.service.ts) stores the policy and applies it; docs/access-policy.md explains
 * the rules and the decisions behind them.
 *
 * An address is admitted when, in this order:
 * 1. it is a syntactically valid address (ASCII; an internationalised domain in its `xn--` form);
 * 2. its domain is not, and is not under, one of the built-in disposable-mail domains
 *    (always refused, whatever the policy says, even when an allowed domain names it);
 * 3. the address is not blocked, and its domain is not, and is not under, a blocked domain;
 * 4. when `block_webmail` is on, its domain is not a public webmail domain;
 * 5. `allowed_domains` is empty (no domain restriction), or its domain is, or is under, one of them.
 * Addresses are trimmed and lower-cased before any of this, so matching ignores case.
 */

/** The stored and answered shape of the policy. */
export interface AccessPolicy {
  /** Domains whose addresses (and whose subdomains' addresses) may sign in; empty = any domain. */
  allowed_domains: string[];
  /** Domains (their subdomains too) and exact addresses that may not sign in. */
  blocked: string[];
  /** Refuse the public webmail providers (WEBMAIL_DOMAINS, WEBMAIL_FAMILIES). */
  block_webmail: boolean;
}

/** Why an address is refused; the first rule that refuses it. */
export type Refusal = 'invalid_address' | 'disposable' | 'blocked' | 'webmail' | 'not_allowed_domain';

export type AddressCheck = { allowed: true } | { allowed: false; reason: Refusal };

/** Most entries a list of the policy may hold. */
export const MAX_POLICY_ENTRIES = 500;

/** The policy in force while none has been saved: no domain restriction (disposables still refused). */
export const OPEN_POLICY: AccessPolicy = Object.freeze({ allowed_domains: [], blocked: [], block_webmail: false }) as AccessPolicy;

/**
 * The built-in disposable-mail domains: exactly 85, always refused (with their subdomains).
 * The best-known throw-away inbox services; a test checks the count and that there are no
 * duplicates. Changing the list changes a documented limit (interface: "85 always refused").
 */
export const DISPOSABLE_DOMAINS: readonly string[] = Object.freeze([
  'mailinator.com',
  'mailinator.net',
  'mailinator2.com',
  'guerrillamail.com',
  'guerrillamail.net',
  'guerrillamail.org',
  'guerrillamail.biz',
  'guerrillamail.de',
  'guerrillamail.info',
  'guerrillamailblock.com',
  'sharklasers.com',
  'grr.la',
  'pokemail.net',
  'spam4.me',
  '10minutemail.com',
  '10minutemail.net',
  '20minutemail.com',
  'temp-mail.org',
  'temp-mail.io',
  'yopmail.com',
  'yopmail.fr',
  'yopmail.net',
  'trashmail.com',
  'trashmail.net',
  'trashmail.de',
  'trashmail.me',
  'trash-mail.com',
  'getnada.com',
  'dispostable.com',
  'maildrop.cc',
  'mailnesia.com',
  'mintemail.com',
  'mytemp.email',
  'throwawaymail.com',
  'tempmailo.com',
  'tempmailaddress.com',
  'fakeinbox.com',
  'mailcatch.com',
  'mohmal.com',
  'emailondeck.com',
  'spamgourmet.com',
  'spambox.us',
  'tempr.email',
  'discard.email',
  'discardmail.com',
  'discardmail.de',
  'spamdecoy.net',
  'incognitomail.org',
  'mailexpire.com',
  'tempinbox.com',
  'jetable.org',
  'mail-temporaire.fr',
  'emailfake.com',
  'fakemailgenerator.com',
  'spamex.com',
  'burnermail.io',
  'tempail.com',
  'tmpmail.org',
  'tmpmail.net',
  'moakt.com',
  'inboxkitten.com',
  'harakirimail.com',
  'dropmail.me',
  '10mail.org',
  'anonbox.net',
  'spambog.com',
  'mailforspam.com',
  'wegwerfmail.de',
  'wegwerfmail.net',
  'einrot.com',
  'spamfree24.org',
  'proxymail.eu',
  // the Fake Mail Generator family
  'armyspy.com',
  'cuvox.de',
  'dayrep.com',
  'fleckens.hu',
  'gustr.com',
  'jourrapide.com',
  'rhyta.com',
  'superrito.com',
  'teleworm.us',
  'getairmail.com',
  'crazymailing.com',
  'mailsac.com',
  '1secmail.com',
]);

/**
 * Public webmail providers: refused when `block_webmail` is on, and never taken as the
 * organisation's domain when a new install starts (see initialPolicy). Subdomains count too.
 */
export const WEBMAIL_DOMAINS: readonly string[] = Object.freeze([
  'gmail.com',
  'googlemail.com',
  'outlook.com',
  'hotmail.com',
  'live.com',
  'msn.com',
  'outlook.fr',
  'outlook.de',
  'outlook.es',
  'outlook.it',
  'live.co.uk',
  'live.fr',
  'live.de',
  'live.nl',
  'live.it',
  'live.ca',
  'live.com.au',
  'yahoo.com',
  'ymail.com',
  'rocketmail.com',
  'icloud.com',
  'me.com',
  'mac.com',
  'aol.com',
  'aim.com',
  'web.de',
  'freenet.de',
  't-online.de',
  'proton.me',
  'protonmail.com',
  'protonmail.ch',
  'pm.me',
  'tutanota.com',
  'tutanota.de',
  'tuta.io',
  'tuta.com',
  'ya.ru',
  'mail.ru',
  'inbox.ru',
  'list.ru',
  'bk.ru',
  'rambler.ru',
  'qq.com',
  '163.com',
  '126.com',
  'yeah.net',
  'sina.com',
  'sohu.com',
  'zoho.com',
  'zohomail.com',
  'mail.com',
  'email.com',
  'fastmail.com',
  'fastmail.fm',
  'hushmail.com',
  'gmx.com',
  'gmx.net',
  'orange.fr',
  'wanadoo.fr',
  'free.fr',
  'laposte.net',
  'sfr.fr',
  'libero.it',
  'virgilio.it',
  'naver.com',
  'daum.net',
  'hanmail.net',
  'rediffmail.com',
  'seznam.cz',
  'wp.pl',
  'o2.pl',
  'interia.pl',
  'onet.pl',
  'btinternet.com',
  'comcast.net',
  'verizon.net',
  'att.net',
  'sbcglobal.net',
  'cox.net',
]);

/**
 * Providers with one domain per country (gmx.de, yandex.ru, yahoo.co.uk, hotmail.fr, ...):
 * `<family>.<tld>`, `<family>.co.<cc>` and `<family>.com.<cc>` are webmail too.
 */
export const WEBMAIL_FAMILIES: readonly string[] = Object.freeze(['gmx', 'yandex', 'yahoo', 'hotmail']);
const FAMILY_TAIL = /^(?:[a-z]{2,3}|co\.[a-z]{2}|com\.[a-z]{2})$/;

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const DOMAIN_BODY = `(?:${LABEL}\\.)+${LABEL}`;
const LOCAL_BODY = "[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}";

/** A domain: two labels or more, ASCII letters, digits and hyphens, at most 253 characters. */
export const DOMAIN_PATTERN = new RegExp(`^(?=.{1,253}$)${DOMAIN_BODY}$`);
/** An address: an ASCII local part (no quoting) `@` a domain. */
export const ADDRESS_PATTERN = new RegExp(`^(?=.{1,254}$)${LOCAL_BODY}@${DOMAIN_BODY}$`);
/**
 * The same patterns for JSON schema (ajv compiles them with the `u` flag): upper case
 * allowed, since entries are lower-cased when the policy is saved.
 */
export const DOMAIN_SCHEMA_PATTERN = `^(?=.{1,253}$)${DOMAIN_BODY.replaceAll('a-z', 'A-Za-z')}$`;
export const BLOCKED_SCHEMA_PATTERN = `^(?=.{1,254}$)(?:${LOCAL_BODY.replaceAll('a-z', 'A-Za-z')}@)?${DOMAIN_BODY.replaceAll('a-z', 'A-Za-z')}$`;

const DISPOSABLE = new Set(DISPOSABLE_DOMAINS);
const WEBMAIL = new Set(WEBMAIL_DOMAINS);

/** Trimmed and lower-cased; the form every address is compared and stored in. */
export function normaliseAddress(email: string): string {
  return email.trim().toLowerCase();
}

/** The domain of a valid (normalised) address, else null. */
export function domainOf(email: string): string | null {
  const e = normaliseAddress(email);
  return ADDRESS_PATTERN.test(e) ? e.slice(e.lastIndexOf('@') + 1) : null;
}

/** The domain itself, then each parent with two labels or more: a.b.bank.example → a.b.bank.example, b.bank.example, bank.example. */
function* selfAndParents(domain: string): Generator<string> {
  let d = domain;
  for (;;) {
    yield d;
    const dot = d.indexOf('.');
    if (dot < 0) return;
    d = d.slice(dot + 1);
    if (!d.includes('.')) return;
  }
}

function underAny(domain: string, set: ReadonlySet<string>): boolean {
  for (const d of selfAndParents(domain)) if (set.has(d)) return true;
  return false;
}

/** A disposable-mail domain or a subdomain of one. */
export function isDisposable(domain: string): boolean {
  return underAny(domain.trim().toLowerCase(), DISPOSABLE);
}

/** A public webmail domain (listed, or of a per-country family) or a subdomain of one. */
export function isWebmail(domain: string): boolean {
  for (const d of selfAndParents(domain.trim().toLowerCase())) {
    if (WEBMAIL.has(d)) return true;
    const dot = d.indexOf('.');
    if (WEBMAIL_FAMILIES.includes(d.slice(0, dot)) && FAMILY_TAIL.test(d.slice(dot + 1))) return true;
  }
  return false;
}

/** Thrown by parsePolicy; the service turns it into 400 `invalid_body`. */
export class PolicyError extends Error {}

/**
 * Checks and normalises a policy given by a caller or read from storage: entries trimmed and
 * lower-cased, duplicates dropped (first place kept), each checked against the patterns,
 * at most MAX_POLICY_ENTRIES per list.
 */
export function parsePolicy(input: unknown): AccessPolicy {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new PolicyError('the policy must be an object');
  const o = input as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 'allowed_domains' && k !== 'blocked' && k !== 'block_webmail') throw new PolicyError(`unknown field ${k}`);
  if (typeof o.block_webmail !== 'boolean') throw new PolicyError('block_webmail must be true or false');
  return {
    allowed_domains: list(o.allowed_domains, 'allowed_domains', (s) => DOMAIN_PATTERN.test(s), 'a domain such as bank.example'),
    blocked: list(o.blocked, 'blocked', (s) => DOMAIN_PATTERN.test(s) || ADDRESS_PATTERN.test(s), 'a domain or an address'),
    block_webmail: o.block_webmail,
  };
}

function list(v: unknown, field: string, ok: (s: string) => boolean, what: string): string[] {
  if (!Array.isArray(v)) throw new PolicyError(`${field} must be a list`);
  if (v.length > MAX_POLICY_ENTRIES) throw new PolicyError(`${field} must have at most ${MAX_POLICY_ENTRIES} entries`);
  const out = new Set<string>();
  v.forEach((raw: unknown, i) => {
    const s = typeof raw === 'string' ? raw.trim().toLowerCase() : null;
    if (s === null || !ok(s)) throw new PolicyError(`${field}.${i} must be ${what}`);
    out.add(s);
  });
  return [...out];
}

/** A policy made ready for many checks: its lists as sets. */
export interface CompiledPolicy {
  readonly policy: AccessPolicy;
  check(email: string): AddressCheck;
  admits(email: string): boolean;
}

export function compilePolicy(policy: AccessPolicy): CompiledPolicy {
  const allowed = new Set(policy.allowed_domains);
  const blockedDomains = new Set(policy.blocked.filter((b) => !b.includes('@')));
  const blockedAddresses = new Set(policy.blocked.filter((b) => b.includes('@')));
  const check = (email: string): AddressCheck => {
    const e = normaliseAddress(email);
    if (!ADDRESS_PATTERN.test(e)) return { allowed: false, reason: 'invalid_address' };
    const domain = e.slice(e.lastIndexOf('@') + 1);
    if (underAny(domain, DISPOSABLE)) return { allowed: false, reason: 'disposable' };
    if (blockedAddresses.has(e) || underAny(domain, blockedDomains)) return { allowed: false, reason: 'blocked' };
    if (policy.block_webmail && isWebmail(domain)) return { allowed: false, reason: 'webmail' };
    if (allowed.size > 0 && !underAny(domain, allowed)) return { allowed: false, reason: 'not_allowed_domain' };
    return { allowed: true };
  };
  return { policy, check, admits: (email) => check(email).allowed };
}

/** One-off check; for many, compilePolicy once. */
export function checkAddress(policy: AccessPolicy, email: string): AddressCheck {
  return compilePolicy(policy).check(email);
}

/** Words for a refusal, for the person adding someone (never for the sign-in answers). */
export function refusalText(reason: Refusal): string {
  switch (reason) {
    case 'invalid_address':
      return 'the address is not a valid e-mail address';
    case 'disposable':
      return 'the address is on a disposable-mail domain';
    case 'blocked':
      return 'the address or its domain is blocked by the access policy';
    case 'webmail':
      return 'the access policy blocks public webmail addresses';
    case 'not_allowed_domain':
      return "the address's domain is not one of the allowed domains";
  }
}

/**
 * The policy a new install starts with: the first owner's domain allowed (with its
 * subdomains), unless that domain is public webmail (or disposable, or the address is not
 * valid), in which case no domain restriction; nothing blocked; webmail not blocked.
 */
export function initialPolicy(ownerEmail: string): AccessPolicy {
  const domain = domainOf(ownerEmail);
  const usable = domain !== null && !isWebmail(domain) && !isDisposable(domain);
  return { allowed_domains: usable ? [domain] : [], blocked: [], block_webmail: false };
}
