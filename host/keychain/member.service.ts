import { AppError } from '../errors.ts';
import { VERSION } from '../version.ts';
import type { AppliedRow } from './applied.repo.ts';
import { compareVersions, openBundle } from './bundle-builder.ts';
import { digestOf, randomToken, verifyWith } from './crypto.ts';
import type { KeychainDeps } from './deps.ts';
import { bundlePayload, readMessage, type BundleWire, type PollPayload, type PolledPayload } from './messages.ts';
import { relayed } from './pairing.service.ts';
import { KEYCHAIN_ACTOR, PARTS, type Part } from './parts.ts';
import type { KeychainState } from './state.repo.ts';
import type { TakeOverService } from './take-over.service.ts';

/** What one poll did: whether the home answered, and what was applied or refused. */
export interface PollResult {
  ok: boolean;
  /** Why the home was not reached or its answer not taken; null when it was. */
  problem: string | null;
  applied: Array<{ part: Part; epoch: number; version: number }>;
  refused: Array<{ part: Part; epoch: number; version: number; reason: string }>;
}

/**
 * A member's side: polls its home (every 30 s on the background round, and on POST
 * /v1/keychain/sync), takes only an answer signed by the keychain's key for its own nonce, then
 * applies each newer bundle of a part it carries, each part atomically: the owning area's apply,
 * the bundle kept (a take-over starts from it) and `config.keychain_applied` in one transaction.
 * A bundle with a bad signature, of an older version, that cannot be opened or that the area
 * refuses is refused and recorded (`config.keychain_refused`), once per bundle and reason. Its own
 * parts are never applied. A poll that fails is noted; a change of why it fails is recorded.
 */
export class MemberService {
  readonly #d: KeychainDeps;
  readonly #takeOver: TakeOverService;

  constructor(deps: KeychainDeps & { takeOver: TakeOverService }) {
    this.#d = deps;
    this.#takeOver = deps.takeOver;
  }

  async poll(): Promise<PollResult> {
    const result: PollResult = { ok: false, problem: null, applied: [], refused: [] };
    let s = await this.#d.state.get();
    if (s === null || s.role !== 'member' || s.home === null) throw new AppError('keychain_not_home', 'only a member polls its home');
    try {
      await this.#d.gate.require();
      let polled = await this.#ask(s);
      if (polled === 'moved') {
        // The old home forwarded a take-over: ask the new home at once.
        s = (await this.#d.state.get())!;
        if (s.role !== 'member') return { ...result, ok: true };
        polled = await this.#ask(s);
      }
      if (polled === 'left' || polled === 'moved') return { ...result, ok: true };
      await this.#take(polled, result);
      result.ok = true;
      await this.#noteProblem(null);
    } catch (e) {
      result.problem = e instanceof AppError ? e.message : `unexpected: ${(e as Error).message}`;
      if (!(e instanceof AppError)) this.#d.log.error({ err: e, component: 'keychain' }, 'keychain poll failed');
      await this.#noteProblem(result.problem);
    }
    return result;
  }

  /** One poll of the home: its verified answer, or `left` (removed from the keychain) or `moved` (a take-over was forwarded). */
  async #ask(s: KeychainState): Promise<PolledPayload | 'left' | 'moved'> {
    const home = s.home!;
    const applied: PollPayload['applied'] = {};
    for (const a of await this.#d.applied.list())
      if (a.applied_epoch !== null && a.applied_version !== null) applied[a.part] = [a.applied_epoch, a.applied_version];
    const payload: PollPayload = {
      purpose: 'poll',
      keychain: s.keychain,
      epoch: s.epoch,
      install: this.#d.keys.fingerprint,
      at: this.#d.clock.now().toISOString(),
      nonce: randomToken(16),
      version: VERSION,
      address: s.address,
      applied,
    };
    const address = home.address ?? '';
    const answer = await this.#d.peers.call(address, 'POST', '/v1/keychain/peer/poll', { payload, signature: this.#d.keys.signAsInstall(payload) });
    const body = (answer.body ?? {}) as { error?: unknown; statement?: unknown; notice?: unknown };
    if (answer.status === 403 && body.error === 'keychain_not_member' && body.statement !== undefined) {
      const st = readMessage('notMember', body.statement, 'keychain_bad_answer');
      const ok =
        verifyWith(this.#d.keys.signPublic(s), st.payload, st.signature) &&
        st.payload.nonce === payload.nonce &&
        st.payload.install === payload.install &&
        st.payload.keychain === s.keychain;
      if (!ok) throw new AppError('keychain_bad_answer', `${address} says this install is not a member, but the keychain key did not sign that`);
      await this.#leave(s);
      return 'left';
    }
    if (answer.status === 409 && body.error === 'keychain_not_home' && body.notice !== null && body.notice !== undefined) {
      await this.#takeOver.receive(body.notice);
      return 'moved';
    }
    if (answer.status !== 200) throw relayed(answer, address);
    const msg = readMessage('polled', answer.body, 'keychain_bad_answer');
    let p = msg.payload;
    if (p.keychain !== s.keychain || p.nonce !== payload.nonce)
      throw new AppError('keychain_bad_answer', `${address} answered for another keychain or another poll`);
    let key = this.#d.keys.signPublic(s);
    if (p.epoch !== s.epoch) {
      // A home of a newer epoch (it took over): its notice, signed by an install this one knows, vouches for its key.
      if (p.notice === null) throw new AppError('keychain_bad_answer', `${address} answered for epoch ${p.epoch} without the notice of its take-over`);
      await this.#takeOver.receive(p.notice);
      const now = await this.#d.state.get();
      if (now === null || now.epoch !== p.epoch)
        throw new AppError('keychain_bad_answer', `${address} answered for epoch ${p.epoch}, which this install does not hold`);
      key = this.#d.keys.signPublic(now);
    }
    if (!verifyWith(key, p, msg.signature)) {
      await this.#recordRefusal(s, null, 'bad_reply_signature', `the answer of ${address} is not signed by the keychain key`);
      throw new AppError('keychain_bad_answer', `the answer of ${address} is not signed by the keychain key`);
    }
    p = { ...p, home: { ...p.home, address: p.home.fingerprint === home.fingerprint ? address : p.home.address } };
    return p;
  }

  /** Takes a verified answer: the home, scope, own parts and members, then each bundle in part order. */
  async #take(p: PolledPayload, result: PollResult): Promise<void> {
    const at = this.#d.clock.now().toISOString();
    await this.#d.ledger.transact(async (trx) => {
      // Two polls at once (a sync beside the round) take their answers one after the other.
      const s = await this.#d.state.lock(trx);
      if (s === null || s.role !== 'member' || s.epoch !== p.epoch) return;
      await this.#d.state.update(trx, { home: p.home, scope: p.scope, own: p.own, last_contact_at: at, updated_at: at });
      await this.#d.members.clear(trx);
      for (const m of p.members) await this.#d.members.insert(trx, { ...m, last_seen_at: null, applied: {}, last_poll_ms: 0, notified_epoch: p.epoch });
    });
    const s = await this.#d.state.get();
    if (s === null || s.role !== 'member' || s.epoch !== p.epoch) return;
    const byPart = new Map(p.bundles.map((b) => [b.part, b]));
    for (const part of PARTS) {
      const b = byPart.get(part);
      if (b === undefined || !p.scope.includes(part) || p.own.includes(part)) continue;
      await this.#bundle(s, b, result);
    }
  }

  async #bundle(s: KeychainState, b: BundleWire, result: PollResult): Promise<void> {
    const refuse = async (reason: string, message: string) => {
      result.refused.push({ part: b.part, epoch: b.epoch, version: b.version, reason });
      await this.#recordRefusal(s, b, reason, message);
    };
    const a = await this.#d.applied.get(b.part);
    if (b.epoch !== s.epoch || !verifyWith(this.#d.keys.signPublic(s), bundlePayload(s.keychain, b), b.signature)) {
      return refuse('bad_signature', `${b.part} version ${b.version}: the bundle is not signed by the keychain key`);
    }
    const order = compareVersions([b.epoch, b.version], appliedOf(a));
    if (order === 0) return;
    if (order < 0)
      return refuse(
        'older_version',
        `${b.part} version ${b.version} (epoch ${b.epoch}) is older than the applied version ${a.applied_version} (epoch ${a.applied_epoch})`,
      );
    const key = this.#d.keys.contentKey(s);
    let data: unknown;
    try {
      data = openBundle(s, key, b).data;
    } catch {
      return refuse('undecryptable', `${b.part} version ${b.version} cannot be opened with the content key`);
    }
    const at = this.#d.clock.now().toISOString();
    const home = s.home!;
    try {
      await this.#d.ledger.transact(
        async (trx, record) => {
          const now = await this.#d.applied.get(b.part, trx);
          if (compareVersions([b.epoch, b.version], appliedOf(now)) <= 0) return;
          const summary = await this.#d.parts[b.part].apply(trx, record, data, KEYCHAIN_ACTOR);
          await this.#d.bundles.put(trx, { ...b, digest: digestOf(key, data) });
          await this.#d.applied.put(trx, { ...now, applied_epoch: b.epoch, applied_version: b.version, applied_at: at, applied_from: home.fingerprint });
          await record({
            type: 'config.keychain_applied',
            actor: KEYCHAIN_ACTOR,
            reason: `${b.part} version ${b.version} of the keychain applied, from ${home.name}`,
            data: { part: b.part, version: b.version, epoch: b.epoch, home: home.fingerprint, home_install: home.name, ...summary },
          });
        },
        { headFirst: true },
      );
      result.applied.push({ part: b.part, epoch: b.epoch, version: b.version });
    } catch (e) {
      if (!(e instanceof AppError) || e.code === 'ledger_unavailable' || e.code === 'storage_unavailable') throw e;
      await refuse(e.code, `${b.part} version ${b.version} cannot be applied here: ${e.message}`);
    }
  }

  /** Records a refusal once per bundle and reason (a poll every 30 s does not repeat it). */
  async #recordRefusal(s: KeychainState, b: BundleWire | null, reason: string, message: string): Promise<void> {
    const home = s.home;
    await this.#d.ledger.transact(
      async (trx, record) => {
        if (b !== null) {
          const a = await this.#d.applied.get(b.part, trx);
          if (a.refused_epoch === b.epoch && a.refused_version === b.version && a.refused_reason === reason) return;
          await this.#d.applied.put(trx, {
            ...a,
            refused_epoch: b.epoch,
            refused_version: b.version,
            refused_reason: reason,
            refused_at: this.#d.clock.now().toISOString(),
          });
        } else {
          const now = await this.#d.state.lock(trx);
          if (now?.last_problem === message) return;
        }
        await record({
          type: 'config.keychain_refused',
          actor: KEYCHAIN_ACTOR,
          reason: message,
          data: {
            part: b?.part ?? null,
            version: b?.version ?? null,
            epoch: b?.epoch ?? null,
            reason,
            home: home?.fingerprint ?? null,
            home_install: home?.name ?? null,
          },
        });
      },
      { headFirst: true },
    );
  }

  /** The home said, signed, that this install is no longer a member: it leaves, keeping the settings it has. */
  async #leave(s: KeychainState): Promise<void> {
    await this.#d.ledger.transact(
      async (trx, record) => {
        if ((await this.#d.state.lock(trx)) === null) return;
        await this.#d.state.remove(trx);
        await this.#d.members.clear(trx);
        await this.#d.bundles.clear(trx);
        await this.#d.applied.clear(trx);
        await record({
          type: 'config.keychain_left',
          actor: KEYCHAIN_ACTOR,
          reason: `the home (${s.home?.name ?? 'unknown'}) removed this install from the keychain; it keeps the settings it has`,
          data: { keychain: s.keychain, home: s.home?.fingerprint ?? null, home_install: s.home?.name ?? null },
        });
      },
      { headFirst: true },
    );
    this.#d.log.warn({ component: 'keychain' }, 'removed from the keychain by its home');
  }

  /** Notes why the home was not reached (null: it was); a change of problem is recorded once. */
  async #noteProblem(problem: string | null): Promise<void> {
    await this.#d.ledger.transact(async (trx, record) => {
      const s = await this.#d.state.lock(trx);
      if (s === null || s.role !== 'member' || s.last_problem === problem) return;
      await this.#d.state.update(trx, { last_problem: problem, updated_at: this.#d.clock.now().toISOString() });
      await record({
        type: problem === null ? 'config.keychain_home_reached' : 'config.keychain_poll_failed',
        actor: KEYCHAIN_ACTOR,
        reason: problem === null ? `the home (${s.home?.name ?? 'unknown'}) answers again` : problem,
        data: { home: s.home?.fingerprint ?? null, home_install: s.home?.name ?? null, since: s.last_contact_at },
      });
    });
  }
}

function appliedOf(a: AppliedRow): [number, number] | null {
  return a.applied_epoch === null || a.applied_version === null ? null : [a.applied_epoch, a.applied_version];
}
