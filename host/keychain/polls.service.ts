import { AppError } from '../errors.ts';
import { publicFrom, signWith, verifyWith } from './crypto.ts';
import type { KeychainDeps } from './deps.ts';
import { readMessage, type BundleWire, type NotMemberPayload, type PolledPayload, type Signed } from './messages.ts';
import { checkSkew, memberRefs } from './pairing.service.ts';
import { PARTS } from './parts.ts';

/** The answer of a poll: the status and body the route sends as they are (some refusals are signed). */
export type PollAnswer = [number, unknown];

/**
 * The home's side of a member's poll (POST /v1/keychain/peer/poll, every 30 s and on sync): the
 * poll must be signed by a member's identity key, dated within 5 minutes and after its last one
 * (a replay changes nothing). The home notes when it heard from the member, its version and what
 * it applied, brings its bundles up to date, and answers, signed by the keychain key, the scope,
 * the member's own parts, the members, and the bundles the member does not have yet. To an
 * install that is not (or no longer) a member it answers a signed `not_member`; an install that
 * was the home and learned of a take-over forwards the take-over's notice instead.
 */
export class PollsService {
  readonly #d: KeychainDeps;

  constructor(deps: KeychainDeps) {
    this.#d = deps;
  }

  async answer(body: unknown): Promise<PollAnswer> {
    const msg = readMessage('poll', body);
    const p = msg.payload;
    await this.#d.gate.require();
    const s = await this.#d.state.get();
    if (s === null) throw new AppError('keychain_none', 'this install is in no keychain');
    if (s.role !== 'home') {
      return [
        409,
        { error: 'keychain_not_home', message: 'this install is not the home of the keychain', notice: s.keychain === p.keychain ? s.notice : null },
      ];
    }
    if (p.keychain !== s.keychain) throw new AppError('keychain_mismatch', 'the poll names another keychain');
    const m = await this.#d.members.get(p.install);
    if (m === null) {
      const payload: NotMemberPayload = { purpose: 'not_member', keychain: s.keychain, install: p.install, nonce: p.nonce };
      return [
        403,
        {
          error: 'keychain_not_member',
          message: 'this install is not a member of the keychain',
          statement: { payload, signature: signWith(this.#d.keys.signing(s), payload) },
        },
      ];
    }
    if (!verifyWith(publicFrom(m.install_key, 'Ed25519'), p, msg.signature))
      throw new AppError('keychain_bad_signature', 'the poll is not signed by the member it names');
    const now = this.#d.clock.now();
    checkSkew(p.at, now.getTime());
    await this.#d.builder.refresh();
    await this.#d.ledger.transact(async (trx) => {
      const noted = await this.#d.members.notePoll(trx, m.fingerprint, Date.parse(p.at), p.nonce, {
        last_seen_at: now.toISOString(),
        version: p.version,
        address: p.address,
        applied: p.applied,
      });
      if (!noted) throw new AppError('keychain_replay', 'this poll is not newer than the last one of this member');
    });
    const home = await this.#d.state.get();
    if (home === null || home.role !== 'home') throw new AppError('keychain_not_home', 'this install stopped being the home');
    const bundles: BundleWire[] = [];
    for (const b of await this.#d.bundles.list()) {
      if (!home.scope.includes(b.part) || m.own.includes(b.part)) continue;
      const a = p.applied[b.part];
      if (a !== undefined && a[0] === b.epoch && a[1] === b.version) continue;
      const { digest: _digest, ...wire } = b;
      bundles.push(wire);
    }
    bundles.sort((a, b) => PARTS.indexOf(a.part) - PARTS.indexOf(b.part));
    const payload: PolledPayload = {
      purpose: 'polled',
      keychain: home.keychain,
      epoch: home.epoch,
      nonce: p.nonce,
      at: now.toISOString(),
      home: this.#d.keys.self(home),
      scope: home.scope,
      own: m.own,
      members: memberRefs(await this.#d.members.list()),
      bundles,
      notice: home.notice,
    };
    const answer: Signed<PolledPayload> = { payload, signature: signWith(this.#d.keys.signing(home), payload) };
    return [200, answer];
  }
}
