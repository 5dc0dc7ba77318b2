import { randomBytes } from 'node:crypto';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Trx } from '../storage/db.ts';
import { fingerprintOfRaw, newBoxKey, newSigningKey, randomToken, rawPublic, sha256 } from './crypto.ts';
import type { KeychainDeps } from './deps.ts';
import { PARTS, type Part } from './parts.ts';
import { checkAddress } from './peer-client.ts';
import type { KeychainState } from './state.repo.ts';
import { WINDOWS } from './windows.ts';

/** The site key as shown once: `kc1.<the keychain key's fingerprint>.<secret>`. */
export const SITE_KEY = /^kc1\.([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$/;

/** An install's name in the keychain: given, else the host (and port) of its address. */
export function nameFor(given: string | undefined, address: string | null, fallback: string): string {
  if (given !== undefined) return given;
  return address === null ? fallback : new URL(address).host.slice(0, 100);
}

/** The state, which must be the home's: 409 `keychain_none` or `keychain_not_home` otherwise. */
export function requireHome(s: KeychainState | null): KeychainState {
  if (s === null) throw new AppError('keychain_none', 'this install is in no keychain: make it the home first (POST /v1/keychain/home)');
  if (s.role !== 'home')
    throw new AppError(
      'keychain_not_home',
      `this install is a member; ask the home${s.home === null ? '' : ` (${s.home.name}, ${s.home.address ?? 'no address'})`}`,
    );
  return s;
}

/**
 * What only the home does: create the keychain, make site keys, set the scope and members' own
 * values, remove a member. Each change is one transaction with its ledger event, taken after the
 * ledger's chain head so that concurrent calls (on any host process of the install) queue.
 */
export class HomeService {
  readonly #d: KeychainDeps;

  constructor(deps: KeychainDeps) {
    this.#d = deps;
  }

  /** POST /v1/keychain/home: this install becomes the home of a new keychain. */
  async create(who: Principal, body: { name?: string; address?: string | null }): Promise<void> {
    await this.#d.gate.require();
    const given = body.address === undefined ? await this.#d.consoleAddress() : body.address;
    const address = given === null ? null : checkAddress(given, 'address');
    const name = nameFor(body.name, address, 'home');
    const sign = newSigningKey();
    const box = newBoxKey();
    const at = this.#d.clock.now().toISOString();
    const state: KeychainState = {
      role: 'home',
      keychain: randomToken(16),
      name,
      address,
      epoch: 0,
      sign_key: rawPublic(sign.publicKey),
      sign_private: this.#d.keys.seal(sign.privateKey),
      content_key: this.#d.keys.sealContentKey(randomBytes(32)),
      box_key: rawPublic(box.publicKey),
      box_private: this.#d.keys.seal(box.privateKey),
      home: null,
      scope: [],
      own: [],
      joined_at: at,
      last_contact_at: null,
      last_problem: null,
      next_round_ms: 0,
      notice: null,
      demoted: null,
      updated_at: at,
    };
    await this.#d.ledger.transact(
      async (trx, record) => {
        const s = await this.#d.state.lock(trx);
        if (s !== null)
          throw new AppError('keychain_exists', `this install is already ${s.role === 'home' ? 'the home of a keychain' : 'a member of a keychain'}`);
        await this.#clearLeftovers(trx);
        await this.#d.state.insert(trx, state);
        await record({
          type: 'config.keychain_created',
          actor: who.actor,
          reason: `this install (${name}) is the home of a new keychain`,
          data: { keychain: state.keychain, name, address, keychain_fingerprint: fingerprintOfRaw(state.sign_key), install: this.#d.keys.fingerprint },
        });
      },
      { headFirst: true },
    );
    this.#d.log.info({ component: 'keychain', name }, 'this install is the home of a new keychain');
  }

  /** A member's leftovers of a keychain it left (none normally): a new keychain starts clean. */
  async #clearLeftovers(trx: Trx): Promise<void> {
    await this.#d.members.clear(trx);
    await this.#d.bundles.clear(trx);
    await this.#d.applied.clear(trx);
    await this.#d.siteKeys.clear(trx);
  }

  /** POST /v1/keychain/site-keys: a one-time key for adding an install, shown once; only its hash is kept. */
  async siteKey(who: Principal): Promise<{ site_key: string; id: string; expires_at: string }> {
    await this.#d.gate.require();
    const secret = randomToken(32);
    const id = randomBytes(4).toString('hex');
    const now = this.#d.clock.now();
    const expires = now.getTime() + WINDOWS.pairingMs;
    let siteKey = '';
    await this.#d.ledger.transact(
      async (trx, record) => {
        const s = requireHome(await this.#d.state.lock(trx));
        siteKey = `kc1.${fingerprintOfRaw(s.sign_key).replaceAll('-', '')}.${secret}`;
        await this.#d.siteKeys.insert(trx, {
          hash: sha256(secret),
          id,
          created_at: now.toISOString(),
          created_by: who.actor,
          expires_ms: expires,
          used_at: null,
          used_by: null,
        });
        await record({
          type: 'config.keychain_site_key_created',
          actor: who.actor,
          reason: `site key ${id} created for adding an install (valid 10 minutes, once)`,
          data: { id, expires_at: new Date(expires).toISOString() },
        });
      },
      { headFirst: true },
    );
    return { site_key: siteKey, id, expires_at: new Date(expires).toISOString() };
  }

  /** POST /v1/keychain/scope: what the keychain carries; the bundles of added parts are issued at once. */
  async scope(who: Principal, parts: Part[]): Promise<void> {
    await this.#d.gate.require();
    const next = PARTS.filter((p) => parts.includes(p));
    await this.#d.ledger.transact(
      async (trx, record) => {
        const s = requireHome(await this.#d.state.lock(trx));
        const added = next.filter((p) => !s.scope.includes(p));
        const removed = s.scope.filter((p) => !next.includes(p));
        if (added.length === 0 && removed.length === 0) return;
        const at = this.#d.clock.now().toISOString();
        await this.#d.state.update(trx, { scope: next, updated_at: at });
        await this.#d.bundles.keepOnly(trx, next);
        await record({
          type: 'config.keychain_scope_changed',
          actor: who.actor,
          reason: `the keychain carries ${next.length === 0 ? 'nothing' : next.join(', ')}`,
          data: { from: s.scope, to: next, added, removed },
        });
        await this.#d.builder.refreshIn(trx, record, { ...s, scope: next });
      },
      { headFirst: true },
    );
  }

  /** POST /v1/keychain/own: a member keeps (or gives back) its own value of a part. */
  async own(who: Principal, install: string, part: Part, own: boolean): Promise<void> {
    await this.#d.gate.require();
    await this.#d.ledger.transact(
      async (trx, record) => {
        requireHome(await this.#d.state.lock(trx));
        const m = await this.#d.members.find(install, trx);
        if (m === null) throw new AppError('not_found', `no member ${install} in this keychain`);
        if (m.own.includes(part) === own) return;
        const next = own ? PARTS.filter((p) => p === part || m.own.includes(p)) : m.own.filter((p) => p !== part);
        await this.#d.members.update(trx, m.fingerprint, { own: next });
        await record({
          type: 'config.keychain_own_changed',
          actor: who.actor,
          reason: own ? `${m.name} keeps its own ${part}` : `${m.name} carries the keychain's ${part} again`,
          data: { install: m.name, fingerprint: m.fingerprint, part, own },
        });
      },
      { headFirst: true },
    );
  }

  /** DELETE /v1/keychain/members/{install}: only an owner removes a member; nothing is removed by itself. */
  async remove(who: Principal, install: string): Promise<{ install: string; fingerprint: string; removed: true }> {
    await this.#d.gate.require();
    return this.#d.ledger.transact(
      async (trx, record) => {
        requireHome(await this.#d.state.lock(trx));
        const m = await this.#d.members.find(install, trx);
        if (m === null) throw new AppError('not_found', `no member ${install} in this keychain`);
        await this.#d.members.remove(trx, m.fingerprint);
        await record({
          type: 'config.keychain_member_removed',
          actor: who.actor,
          reason: `${m.name} removed from the keychain`,
          data: { install: m.name, fingerprint: m.fingerprint, address: m.address, last_seen_at: m.last_seen_at },
        });
        return { install: m.name, fingerprint: m.fingerprint, removed: true as const };
      },
      { headFirst: true },
    );
  }
}
