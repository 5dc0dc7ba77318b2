import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import { fingerprintOfRaw, newSigningKey, publicFrom, rawPublic, verifyWith } from './crypto.ts';
import type { KeychainDeps } from './deps.ts';
import { readMessage, type AckPayload, type Signed, type TakeOverPayload } from './messages.ts';
import { KEYCHAIN_ACTOR } from './parts.ts';
import type { KeychainState } from './state.repo.ts';
import type { Trx } from '../storage/db.ts';
import { WINDOWS } from './windows.ts';

/** When a member may take over: once it has not reached its home for 15 minutes. */
export function takeOverAllowedAt(s: Pick<KeychainState, 'last_contact_at' | 'joined_at'>): number {
  return Date.parse(s.last_contact_at ?? s.joined_at) + WINDOWS.homeLostMs;
}

/**
 * Take-over: when a member has not reached its home for 15 minutes, an owner on it may make it the
 * home (POST /v1/keychain/home {take_over: true}). It becomes the home of the next epoch with a
 * new signing key and the last bundles it holds (issued again under the new key), keeps the
 * members it was told of and lists the old home among them; the parts it kept its own leave the
 * scope, so its own values never reach the others. It tells every install of the keychain with a
 * notice signed by its identity key, which they know from the members list; it retries until each
 * acknowledges. A member takes the new home; the old home, if it comes back, finds itself a member
 * and says so (`demoted`). Of two take-overs the higher epoch wins, then the lower fingerprint.
 */
export class TakeOverService {
  readonly #d: KeychainDeps;
  /** Notices refused by this process (epoch and install), so that each is recorded once. */
  readonly #refused = new Set<string>();

  constructor(deps: KeychainDeps) {
    this.#d = deps;
  }

  async takeOver(who: Principal): Promise<void> {
    await this.#d.gate.require();
    const now = this.#d.clock.now();
    const sign = newSigningKey();
    await this.#d.ledger.transact(
      async (trx, record) => {
        const s = await this.#d.state.lock(trx);
        if (s === null) throw new AppError('keychain_none', 'this install is in no keychain');
        if (s.role === 'home' || s.home === null) throw new AppError('keychain_exists', 'this install is already the home');
        const allowed = takeOverAllowedAt(s);
        if (now.getTime() < allowed) {
          throw new AppError(
            'home_not_lost',
            `the home was last reached at ${s.last_contact_at ?? s.joined_at}; a take-over is allowed once it has not been reached for 15 minutes (from ${new Date(allowed).toISOString()})`,
          );
        }
        const epoch = s.epoch + 1;
        const scope = s.scope.filter((p) => !s.own.includes(p));
        const dropped = s.scope.filter((p) => s.own.includes(p));
        const reissued = await this.#d.builder.reissue(trx, s, epoch, sign.privateKey, scope);
        const old = s.home;
        await this.#d.members.remove(trx, this.#d.keys.fingerprint);
        if ((await this.#d.members.get(old.fingerprint, trx)) === null) {
          await this.#d.members.insert(trx, {
            ...old,
            name: (await this.#d.members.find(old.name, trx)) === null ? old.name : old.fingerprint,
            own: [],
            paired_at: s.joined_at,
            last_seen_at: s.last_contact_at,
            applied: {},
            last_poll_ms: 0,
            notified_epoch: s.epoch,
          });
        }
        const payload: TakeOverPayload = {
          purpose: 'take_over',
          keychain: s.keychain,
          epoch,
          home: this.#d.keys.self(s),
          sign_key: rawPublic(sign.publicKey),
          at: now.toISOString(),
          previous: { epoch: s.epoch, home: old.fingerprint },
        };
        const notice: Signed = { payload: payload as unknown as Record<string, unknown>, signature: this.#d.keys.signAsInstall(payload) };
        await this.#d.state.update(trx, {
          role: 'home',
          epoch,
          sign_key: payload.sign_key,
          sign_private: this.#d.keys.seal(sign.privateKey),
          home: null,
          scope,
          own: [],
          notice,
          demoted: null,
          last_problem: null,
          next_round_ms: 0,
          updated_at: now.toISOString(),
        });
        await record({
          type: 'config.keychain_took_over',
          actor: who.actor,
          reason: `this install (${s.name}) took over as the home: ${old.name} was last reached at ${s.last_contact_at ?? s.joined_at}`,
          data: {
            epoch,
            previous_home: { install: old.name, fingerprint: old.fingerprint, address: old.address },
            last_contact_at: s.last_contact_at,
            scope,
            dropped,
            bundles: reissued,
            keychain_fingerprint: fingerprintOfRaw(payload.sign_key),
          },
        });
      },
      { headFirst: true },
    );
    this.#d.log.warn({ component: 'keychain' }, 'this install took over as the home of its keychain');
    await this.notify();
  }

  /**
   * The home that took over: sends its notice to each install that has not acknowledged it (in
   * the background round every 30 s, and at once after the take-over). Never throws.
   */
  async notify(): Promise<void> {
    try {
      const s = await this.#d.state.get();
      if (s === null || s.role !== 'home' || s.notice === null) return;
      for (const m of await this.#d.members.list()) {
        if (m.notified_epoch >= s.epoch || m.address === null) continue;
        try {
          const answer = await this.#d.peers.call(m.address, 'POST', '/v1/keychain/peer/take-over', s.notice);
          if (answer.status !== 200) continue;
          const ack = readMessage('ack', answer.body, 'keychain_bad_answer');
          const a: AckPayload = ack.payload;
          if (a.keychain !== s.keychain || a.epoch !== s.epoch || a.install !== m.fingerprint) continue;
          if (!verifyWith(publicFrom(m.install_key, 'Ed25519'), a, ack.signature)) continue;
          await this.#d.ledger.transact(async (trx, record) => {
            await this.#d.members.update(trx, m.fingerprint, { notified_epoch: s.epoch });
            await record({
              type: 'config.keychain_notice_delivered',
              actor: KEYCHAIN_ACTOR,
              reason: `${m.name} acknowledged that this install is the home (epoch ${s.epoch})`,
              data: { install: m.name, fingerprint: m.fingerprint, epoch: s.epoch },
            });
          });
        } catch (err) {
          this.#d.log.info({ component: 'keychain', install: m.name, problem: (err as Error).message }, 'take-over notice not delivered yet');
        }
      }
    } catch (err) {
      this.#d.log.error({ err, component: 'keychain' }, 'take-over notices failed');
    }
  }

  /**
   * A take-over is taken only where the old home is lost too: a member that reached its home
   * within 3 minutes, or a home that other members polled within 3 minutes, refuses it (409
   * `keychain_home_alive`, recorded once per notice), so one install cannot take a keychain whose
   * home the others still reach; the new home retries every 30 s, and the notice is taken once
   * the old home is lost here too.
   */
  async #homeAlive(trx: Trx, s: KeychainState, p: TakeOverPayload, nowMs: number): Promise<string | null> {
    if (s.role === 'member') {
      const contact = Date.parse(s.last_contact_at ?? s.joined_at);
      return nowMs - contact < WINDOWS.notAnsweringMs
        ? `this install reached its home (${s.home?.name ?? 'unknown'}) at ${new Date(contact).toISOString()}`
        : null;
    }
    const serving = (await this.#d.members.list(trx)).filter(
      (m) => m.fingerprint !== p.home.fingerprint && m.last_seen_at !== null && nowMs - Date.parse(m.last_seen_at) < WINDOWS.notAnsweringMs,
    );
    return serving.length > 0 ? `this install is the home and ${serving.map((m) => m.name).join(', ')} polled it within 3 minutes` : null;
  }

  /** Records a refused notice once (per epoch and install, in this process), after its transaction. */
  async #refuse(p: TakeOverPayload, why: string): Promise<never> {
    const key = `${p.epoch}:${p.home.fingerprint}`;
    if (!this.#refused.has(key)) {
      this.#refused.add(key);
      await this.#d.ledger
        .append({
          type: 'config.keychain_take_over_refused',
          actor: KEYCHAIN_ACTOR,
          reason: `${p.home.name} says it took over as the home, but ${why}`,
          data: { epoch: p.epoch, by: { install: p.home.name, fingerprint: p.home.fingerprint, address: p.home.address }, took_over_at: p.at },
        })
        .catch((err: unknown) => this.#d.log.error({ err, component: 'keychain' }, 'could not record a refused take-over'));
    }
    throw new AppError('keychain_home_alive', `the take-over is refused here: ${why}`);
  }

  /**
   * A take-over notice (POST /v1/keychain/peer/take-over, or forwarded in an answer): checked, then
   * taken (a member follows the new home; a home is demoted). Answers the signed acknowledgement.
   */
  async receive(body: unknown): Promise<Signed<AckPayload>> {
    const msg = readMessage('takeOver', body);
    const p = msg.payload;
    await this.#d.gate.require();
    const ack = (): Signed<AckPayload> => {
      const a: AckPayload = { purpose: 'take_over_ack', keychain: p.keychain, epoch: p.epoch, install: this.#d.keys.fingerprint };
      return { payload: a, signature: this.#d.keys.signAsInstall(a) };
    };
    // Checked before anything is locked or written: an unsigned notice costs the receiver nothing.
    const verify = async (s: KeychainState | null, trx?: Trx): Promise<KeychainState> => {
      if (s === null) throw new AppError('keychain_none', 'this install is in no keychain');
      if (p.keychain !== s.keychain) throw new AppError('keychain_mismatch', 'the notice names another keychain');
      const known = await this.#d.members.get(p.home.fingerprint, trx);
      if (p.home.fingerprint !== this.#d.keys.fingerprint && (known === null || known.install_key !== p.home.install_key)) {
        throw new AppError('keychain_not_member', 'the install that took over is not one this install knows in the keychain');
      }
      if (fingerprintOfRaw(p.home.install_key) !== p.home.fingerprint || !verifyWith(publicFrom(p.home.install_key, 'Ed25519'), p, msg.signature)) {
        throw new AppError('keychain_bad_signature', 'the notice is not signed by the install that took over');
      }
      return s;
    };
    await verify(await this.#d.state.get());
    const nowMs = this.#d.clock.now().getTime();
    const now = new Date(nowMs).toISOString();
    try {
      await this.#transactReceive(verify, msg, p, nowMs, now);
    } catch (e) {
      if (e instanceof HomeAlive) return this.#refuse(p, e.message);
      throw e;
    }
    return ack();
  }

  async #transactReceive(
    verify: (s: KeychainState | null, trx?: Trx) => Promise<KeychainState>,
    msg: Signed<TakeOverPayload>,
    p: TakeOverPayload,
    nowMs: number,
    now: string,
  ): Promise<void> {
    await this.#d.ledger.transact(
      async (trx, record) => {
        const s = await verify(await this.#d.state.lock(trx), trx);
        if (p.home.fingerprint === this.#d.keys.fingerprint) return;
        const current = s.role === 'home' ? this.#d.keys.fingerprint : (s.home?.fingerprint ?? '');
        if (p.epoch === s.epoch && current === p.home.fingerprint) return;
        const wins = p.epoch > s.epoch || (p.epoch === s.epoch && p.home.fingerprint < current);
        if (!wins) throw new AppError('keychain_mismatch', `this install is at epoch ${s.epoch}: the notice of epoch ${p.epoch} is older`);
        const alive = await this.#homeAlive(trx, s, p, nowMs);
        if (alive !== null) throw new HomeAlive(alive);
        const by = { install: p.home.name, fingerprint: p.home.fingerprint, address: p.home.address };
        const base = {
          role: 'member' as const,
          epoch: p.epoch,
          sign_key: p.sign_key,
          sign_private: null,
          home: p.home,
          notice: msg as unknown as Signed,
          last_contact_at: now,
          last_problem: null,
          next_round_ms: 0,
          updated_at: now,
        };
        if (s.role === 'home') {
          await this.#d.siteKeys.clear(trx);
          // What it carries is the new home's to say, on its first answer (the next round polls at once).
          await this.#d.state.update(trx, {
            ...base,
            scope: [],
            own: [],
            demoted: { at: now, epoch: p.epoch, by: { name: p.home.name, fingerprint: p.home.fingerprint, address: p.home.address } },
          });
          await record({
            type: 'config.keychain_demoted',
            actor: KEYCHAIN_ACTOR,
            reason: `${p.home.name} took over as the home at ${p.at}: this install, the home until then, is now a member`,
            data: { epoch: p.epoch, previous_epoch: s.epoch, by, took_over_at: p.at },
          });
          this.#d.log.warn({ component: 'keychain', by: p.home.name }, 'another install took over as the home: this install is now a member');
        } else {
          await this.#d.state.update(trx, base);
          await record({
            type: 'config.keychain_home_changed',
            actor: KEYCHAIN_ACTOR,
            reason: `${p.home.name} took over as the home of the keychain`,
            data: {
              epoch: p.epoch,
              previous_epoch: s.epoch,
              from: s.home === null ? null : { install: s.home.name, fingerprint: s.home.fingerprint, address: s.home.address },
              to: by,
            },
          });
        }
      },
      { headFirst: true },
    );
  }
}

/** A notice refused because the old home is still reached here (thrown inside the transaction, recorded after it). */
class HomeAlive extends Error {}
