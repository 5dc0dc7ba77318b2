import { AppError, ERROR_STATUS, type ErrorCode } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import { fingerprintOfRaw, newBoxKey, openSealed, publicFrom, randomToken, rawPublic, sealTo, sha256, signWith, verifyWith } from './crypto.ts';
import type { KeychainDeps } from './deps.ts';
import { nameFor, requireHome, SITE_KEY } from './home.service.ts';
import { readMessage, type HelloPayload, type MemberRef, type PairedPayload, type PairPayload, type Signed } from './messages.ts';
import type { MemberRow } from './members.repo.ts';
import { checkAddress, type PeerAnswer } from './peer-client.ts';
import type { KeychainState } from './state.repo.ts';
import { VERSION } from '../version.ts';
import { WINDOWS } from './windows.ts';

/** The codes a joining install passes on as the home answered them (everything else is a bad answer). */
const RELAYED: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'site_key_invalid',
  'site_key_used',
  'site_key_expired',
  'licence_tier',
  'licence_limit',
  'keychain_name_taken',
  'keychain_already_member',
  'keychain_not_home',
  'keychain_mismatch',
  'keychain_clock_skew',
  'keychain_bad_signature',
  'keychain_none',
  'rate_limited',
]);

/** An error answer of another install as an error of ours: the home's words, our status for its code. */
export function relayed(answer: PeerAnswer, address: string): AppError {
  const body = (answer.body ?? {}) as { error?: unknown; message?: unknown };
  const code = typeof body.error === 'string' ? body.error : '';
  const message = typeof body.message === 'string' ? body.message.slice(0, 500) : code;
  if (code === 'not_operating') return new AppError('keychain_home_unreachable', `${address} is not operating yet`);
  if (code in ERROR_STATUS && RELAYED.has(code as ErrorCode)) return new AppError(code as ErrorCode, `the home answered: ${message}`);
  return new AppError('keychain_bad_answer', `${address} answered ${answer.status}${code === '' ? '' : ` ${code}`}`);
}

/** Whether a time another install gave is close enough to ours. */
export function checkSkew(at: string, nowMs: number): void {
  const t = Date.parse(at);
  if (!Number.isFinite(t) || Math.abs(t - nowMs) > WINDOWS.skewMs) {
    throw new AppError('keychain_clock_skew', `the message is dated ${at}, more than 5 minutes from this install's clock: check both clocks (NTP)`);
  }
}

/** The members as every member is told them (what a take-over starts from). */
export function memberRefs(rows: MemberRow[]): MemberRef[] {
  return rows.map((m) => ({
    name: m.name,
    fingerprint: m.fingerprint,
    install_key: m.install_key,
    box_key: m.box_key,
    address: m.address,
    version: m.version,
    own: m.own,
    paired_at: m.paired_at,
  }));
}

/** Why a pairing is refused, thrown inside its transaction (which is then rolled back) and recorded after. */
class PairRefused extends Error {
  readonly code: ErrorCode;
  readonly id: string | null;
  constructor(code: ErrorCode, message: string, id: string | null) {
    super(message);
    this.code = code;
    this.id = id;
  }
}

const siteKeyContext = (keychain: string, install: string) => `site-key:${keychain}:${install}`;
export const contentKeyContext = (keychain: string, install: string) => `content-key:${keychain}:${install}`;

/**
 * Pairing an install with the home by a one-time site key. The joining install reads the home's
 * signed hello, checks that its keychain key is the one the site key names (so nobody else can
 * pose as the home), and sends its keys and the site key's secret sealed to the home's box key,
 * signed with its identity key. The home checks the secret against the hashes it kept (valid 10
 * minutes, once), the licence's installs and the name, adds the member, and answers the content
 * key sealed to the member's box key, signed by the keychain key. Neither secret is ever on the
 * wire in clear or in a log.
 */
export class PairingService {
  readonly #d: KeychainDeps;

  constructor(deps: KeychainDeps) {
    this.#d = deps;
  }

  /** GET /v1/keychain/peer/hello (the home): who it is, signed by the keychain key. */
  async hello(): Promise<Signed<HelloPayload>> {
    await this.#d.gate.require();
    const s = requireHome(await this.#d.state.get());
    const payload: HelloPayload = {
      purpose: 'hello',
      keychain: s.keychain,
      epoch: s.epoch,
      home: this.#d.keys.self(s),
      sign_key: s.sign_key,
      at: this.#d.clock.now().toISOString(),
    };
    return { payload, signature: signWith(this.#d.keys.signing(s), payload) };
  }

  /** POST /v1/keychain/peer/pair (the home): pairs the install that sent it, or refuses and records why. */
  async pair(body: unknown, client: string): Promise<Signed<PairedPayload>> {
    const msg = readMessage('pair', body);
    const p = msg.payload;
    const allowance = await this.#d.gate.require();
    const s = requireHome(await this.#d.state.get());
    const refuse = async (code: ErrorCode, message: string, siteKey: string | null = null): Promise<never> => {
      await this.#d.ledger
        .append({
          type: 'config.keychain_pair_refused',
          actor: 'keychain',
          reason: message,
          data: { error: code, install: p.install.name, fingerprint: p.install.fingerprint, address: p.install.address, client, site_key: siteKey },
        })
        .catch((err: unknown) => this.#d.log.error({ err, component: 'keychain' }, 'could not record a refused pairing'));
      throw new AppError(code, message);
    };
    if (p.keychain !== s.keychain) return refuse('keychain_mismatch', 'the pairing names another keychain');
    let installKey;
    try {
      installKey = publicFrom(p.install.install_key, 'Ed25519');
    } catch {
      return refuse('keychain_bad_signature', 'the install key is not an Ed25519 key');
    }
    if (fingerprintOfRaw(p.install.install_key) !== p.install.fingerprint || !verifyWith(installKey, p, msg.signature)) {
      return refuse('keychain_bad_signature', 'the pairing is not signed by the install it names');
    }
    const now = this.#d.clock.now();
    try {
      checkSkew(p.at, now.getTime());
    } catch (e) {
      return refuse('keychain_clock_skew', (e as Error).message);
    }
    let secret: string;
    try {
      secret = openSealed(this.#d.keys.box(s), p.secret, siteKeyContext(s.keychain, p.install.fingerprint)).toString('utf8');
    } catch {
      return refuse('site_key_invalid', 'the site key is not one of this home');
    }
    const hash = sha256(secret);
    const at = now.toISOString();
    const no = (code: ErrorCode, message: string, id: string | null): never => {
      throw new PairRefused(code, message, id);
    };
    let paired: Signed<PairedPayload>;
    try {
      paired = await this.#d.ledger.transact(
        async (trx, record) => {
          const home = requireHome(await this.#d.state.lock(trx));
          const key = await this.#d.siteKeys.byHash(trx, hash);
          if (key === null) return no('site_key_invalid', 'the site key is not one of this home', null);
          if (key.used_at !== null) no('site_key_used', `site key ${key.id} was used already (${key.used_at}): create another`, key.id);
          if (key.expires_ms <= now.getTime())
            no('site_key_expired', `site key ${key.id} expired at ${new Date(key.expires_ms).toISOString()} (10 minutes): create another`, key.id);
          if (p.install.fingerprint === this.#d.keys.fingerprint || (await this.#d.members.get(p.install.fingerprint, trx)) !== null)
            no('keychain_already_member', `install ${p.install.fingerprint} is already in this keychain`, key.id);
          if (p.install.name === home.name || (await this.#d.members.find(p.install.name, trx)) !== null)
            no('keychain_name_taken', `an install of this keychain is already called ${p.install.name}: give another name`, key.id);
          const installs = (await this.#d.members.count(trx)) + 2;
          if (allowance.installs !== null && installs > allowance.installs)
            no('licence_limit', `the Enterprise licence allows ${allowance.installs} installs in one keychain; it has ${installs - 1}`, key.id);
          if (!(await this.#d.siteKeys.use(trx, hash, at, p.install.fingerprint)))
            no('site_key_used', `site key ${key.id} was used already: create another`, key.id);
          await this.#d.members.insert(trx, {
            ...p.install,
            own: [],
            paired_at: at,
            last_seen_at: null,
            applied: {},
            last_poll_ms: 0,
            notified_epoch: home.epoch,
          });
          await record({
            type: 'config.keychain_paired',
            actor: 'keychain',
            reason: `${p.install.name} paired with the keychain by site key ${key.id}`,
            data: {
              install: p.install.name,
              fingerprint: p.install.fingerprint,
              address: p.install.address,
              version: p.install.version,
              site_key: key.id,
              installs,
              installs_allowed: allowance.installs,
              client,
            },
          });
          const payload: PairedPayload = {
            purpose: 'paired',
            keychain: home.keychain,
            epoch: home.epoch,
            nonce: p.nonce,
            member: p.install.fingerprint,
            content_key: sealTo(
              publicFrom(p.install.box_key, 'X25519'),
              this.#d.keys.contentKey(home),
              contentKeyContext(home.keychain, p.install.fingerprint),
            ),
            home: this.#d.keys.self(home),
            scope: home.scope,
            members: memberRefs(await this.#d.members.list(trx)),
            notice: home.notice,
          };
          return { payload, signature: signWith(this.#d.keys.signing(home), payload) };
        },
        { headFirst: true },
      );
    } catch (e) {
      if (e instanceof PairRefused) return refuse(e.code, e.message, e.id);
      throw e;
    }
    this.#d.log.info({ component: 'keychain', install: p.install.name, fingerprint: p.install.fingerprint }, 'install paired');
    return paired;
  }

  /** POST /v1/keychain/join (the new install): pairs with the home at `home` by a site key. */
  async join(who: Principal, body: { home: string; site_key: string; name?: string; address?: string | null }): Promise<void> {
    await this.#d.gate.require();
    if ((await this.#d.state.get()) !== null) throw new AppError('keychain_exists', 'this install is already in a keychain');
    const homeAddress = checkAddress(body.home, 'home');
    const m = SITE_KEY.exec(body.site_key.trim());
    if (m === null) throw new AppError('site_key_invalid', 'that is not a site key (kc1.…): copy it whole from the home');
    const [, keyFingerprint, secret] = m as unknown as [string, string, string];
    const given = body.address === undefined ? await this.#d.consoleAddress() : body.address;
    if (given === null) throw new AppError('invalid_body', 'address is needed (the console address, or `address`): the keychain reaches this install there');
    const address = checkAddress(given, 'address');
    const name = nameFor(body.name, address, 'member');

    const helloAnswer = await this.#d.peers.call(homeAddress, 'GET', '/v1/keychain/peer/hello');
    if (helloAnswer.status !== 200) throw relayed(helloAnswer, homeAddress);
    const hello = readMessage('hello', helloAnswer.body, 'keychain_bad_answer');
    const signKey = publicFrom(hello.payload.sign_key, 'Ed25519');
    if (fingerprintOfRaw(hello.payload.sign_key).replaceAll('-', '') !== keyFingerprint) {
      throw new AppError('site_key_invalid', `the install at ${homeAddress} is not the home this site key was made on`);
    }
    if (!verifyWith(signKey, hello.payload, hello.signature))
      throw new AppError('keychain_bad_answer', `${homeAddress} answered a hello the keychain key did not sign`);
    if (hello.payload.home.fingerprint === this.#d.keys.fingerprint) throw new AppError('keychain_already_member', 'this install is that home itself');

    const box = newBoxKey();
    const me = {
      name,
      fingerprint: this.#d.keys.fingerprint,
      install_key: this.#d.keys.installKey,
      box_key: rawPublic(box.publicKey),
      address,
      version: VERSION,
    };
    const payload: PairPayload = {
      purpose: 'pair',
      keychain: hello.payload.keychain,
      install: me,
      secret: sealTo(publicFrom(hello.payload.home.box_key, 'X25519'), Buffer.from(secret, 'utf8'), siteKeyContext(hello.payload.keychain, me.fingerprint)),
      at: this.#d.clock.now().toISOString(),
      nonce: randomToken(16),
    };
    const answer = await this.#d.peers.call(homeAddress, 'POST', '/v1/keychain/peer/pair', { payload, signature: this.#d.keys.signAsInstall(payload) });
    if (answer.status !== 201) throw relayed(answer, homeAddress);
    const paired = readMessage('paired', answer.body, 'keychain_bad_answer').payload;
    const signed = (answer.body as Signed).signature;
    if (!verifyWith(signKey, paired, signed) || paired.nonce !== payload.nonce || paired.member !== me.fingerprint || paired.keychain !== payload.keychain) {
      throw new AppError('keychain_bad_answer', `${homeAddress} answered a pairing the keychain key did not sign for this install`);
    }
    let contentKey: Buffer;
    try {
      contentKey = openSealed(box.privateKey, paired.content_key, contentKeyContext(paired.keychain, me.fingerprint));
    } catch {
      throw new AppError('keychain_bad_answer', 'the content key from the home cannot be opened');
    }
    if (contentKey.length !== 32) throw new AppError('keychain_bad_answer', 'the content key from the home is not 256 bits');
    const at = this.#d.clock.now().toISOString();
    const state: KeychainState = {
      role: 'member',
      keychain: paired.keychain,
      name,
      address,
      epoch: paired.epoch,
      sign_key: hello.payload.sign_key,
      sign_private: null,
      content_key: this.#d.keys.sealContentKey(contentKey),
      box_key: me.box_key,
      box_private: this.#d.keys.seal(box.privateKey),
      // The address this install reached the home at is the one it polls.
      home: { ...paired.home, address: homeAddress },
      scope: paired.scope,
      own: [],
      joined_at: at,
      last_contact_at: at,
      last_problem: null,
      next_round_ms: 0,
      notice: paired.notice,
      demoted: null,
      updated_at: at,
    };
    await this.#d.ledger.transact(
      async (trx, record) => {
        if ((await this.#d.state.lock(trx)) !== null) throw new AppError('keychain_exists', 'this install is already in a keychain');
        await this.#d.members.clear(trx);
        await this.#d.bundles.clear(trx);
        await this.#d.applied.clear(trx);
        await this.#d.siteKeys.clear(trx);
        await this.#d.state.insert(trx, state);
        for (const mr of paired.members)
          await this.#d.members.insert(trx, { ...mr, last_seen_at: null, applied: {}, last_poll_ms: 0, notified_epoch: paired.epoch });
        await record({
          type: 'config.keychain_joined',
          actor: who.actor,
          reason: `this install (${name}) joined the keychain of ${paired.home.name} at ${homeAddress}`,
          data: {
            keychain: paired.keychain,
            name,
            address,
            home: { install: paired.home.name, fingerprint: paired.home.fingerprint, address: homeAddress },
            keychain_fingerprint: fingerprintOfRaw(hello.payload.sign_key),
            scope: paired.scope,
          },
        });
      },
      { headFirst: true },
    );
    this.#d.log.info({ component: 'keychain', home: homeAddress }, 'joined a keychain');
  }
}
