import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { KeychainDeps } from './deps.ts';
import { HomeService } from './home.service.ts';
import { MemberService, type PollResult } from './member.service.ts';
import { PairingService } from './pairing.service.ts';
import { PollsService } from './polls.service.ts';
import { TakeOverService } from './take-over.service.ts';
import { ViewService, type KeychainView } from './view.service.ts';
import { WINDOWS } from './windows.ts';

/**
 * The keychain, one façade over the files that each do one job:
 * - home.service.ts: create the keychain, site keys, scope, own values, removing a member;
 * - pairing.service.ts: the home's hello and pairing, and joining on the new install;
 * - bundle-builder.ts: the home's signed, encrypted bundles of each part;
 * - polls.service.ts: the home's answer to a member's poll;
 * - member.service.ts: a member's poll and the atomic apply of each newer bundle;
 * - take-over.service.ts: taking over when the home is lost, and the notices that follow;
 * - view.service.ts: GET /v1/keychain.
 */
export class KeychainService {
  readonly home: HomeService;
  readonly pairing: PairingService;
  readonly polls: PollsService;
  readonly member: MemberService;
  readonly takeOver: TakeOverService;
  readonly #view: ViewService;
  readonly #d: KeychainDeps;
  #running: Promise<unknown> | null = null;

  constructor(deps: KeychainDeps) {
    this.#d = deps;
    this.home = new HomeService(deps);
    this.pairing = new PairingService(deps);
    this.polls = new PollsService(deps);
    this.takeOver = new TakeOverService(deps);
    this.member = new MemberService({ ...deps, takeOver: this.takeOver });
    this.#view = new ViewService(deps);
  }

  view(): Promise<KeychainView> {
    return this.#view.view();
  }

  /** POST /v1/keychain/home: a new keychain with this install as its home, or a take-over. */
  async makeHome(who: Principal, body: { take_over?: boolean; name?: string; address?: string | null }): Promise<void> {
    if (body.take_over === true) await this.takeOver.takeOver(who);
    else await this.home.create(who, body);
  }

  /** POST /v1/keychain/join, then the first poll at once. */
  async join(who: Principal, body: { home: string; site_key: string; name?: string; address?: string | null }): Promise<PollResult> {
    await this.pairing.join(who, body);
    return this.member.poll();
  }

  /**
   * DELETE /v1/keychain (an owner): this install leaves its keychain and keeps the settings it
   * has. A member is listed by the home until an owner there removes it; a home that leaves
   * leaves its members without a home (they may take over after 15 minutes). The way out of a
   * split after a take-over the others refused, and of a failback (docs/keychain.md).
   */
  async leave(who: Principal): Promise<void> {
    await this.#d.gate.require();
    await this.#d.ledger.transact(
      async (trx, record) => {
        const s = await this.#d.state.lock(trx);
        if (s === null) throw new AppError('keychain_none', 'this install is in no keychain');
        await this.#d.state.remove(trx);
        await this.#d.members.clear(trx);
        await this.#d.bundles.clear(trx);
        await this.#d.applied.clear(trx);
        await this.#d.siteKeys.clear(trx);
        await record({
          type: 'config.keychain_left',
          actor: who.actor,
          reason: `this install (${s.name}) left the keychain as its ${s.role}; it keeps the settings it has`,
          data: { keychain: s.keychain, role: s.role, epoch: s.epoch, home: s.home === null ? null : s.home.fingerprint, home_install: s.home?.name ?? null },
        });
      },
      { headFirst: true },
    );
  }

  /** POST /v1/keychain/sync: a member polls its home now; the home brings its bundles up to date and sends pending notices. */
  async sync(): Promise<PollResult | null> {
    await this.#d.gate.require();
    const s = await this.#d.state.get();
    if (s?.role === 'member') return this.member.poll();
    await this.#d.builder.refresh();
    await this.takeOver.notify();
    return null;
  }

  /**
   * The background round, every 30 s of the service's clock, taken by one host process of the
   * install: a member polls its home; the home brings its bundles up to date and retries the
   * notices of a take-over. Never throws.
   */
  async tick(): Promise<void> {
    if (this.#running !== null) return;
    const run = (async () => {
      try {
        const s = await this.#d.state.get();
        if (s === null) return;
        const now = this.#d.clock.now().getTime();
        if (!(await this.#d.state.claimRound(now, now + WINDOWS.pollMs))) return;
        if (s.role === 'member') await this.member.poll();
        else {
          await this.#d.builder.refresh();
          await this.takeOver.notify();
        }
      } catch (err) {
        this.#d.log.error({ err, component: 'keychain' }, 'keychain round failed');
      }
    })();
    this.#running = run;
    try {
      await run;
    } finally {
      this.#running = null;
    }
  }

  /** Resolves once a running round has ended (shutdown, tests). */
  async idle(): Promise<void> {
    await this.#running;
  }
}
