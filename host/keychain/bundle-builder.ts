import type { KeyObject } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { BundleRow, BundlesRepo } from './bundles.repo.ts';
import { decrypt, digestOf, encrypt, signWith } from './crypto.ts';
import type { KeyRing } from './keys.ts';
import type { MembersRepo } from './members.repo.ts';
import { bundleAad, bundlePayload } from './messages.ts';
import type { CarriedParts, Part } from './parts.ts';
import type { KeychainState, KeychainStateRepo } from './state.repo.ts';

/** How far above its own version a home believes a member that says it applied more (a restored backup). */
export const MAX_VERSION_JUMP = 1000;

/** What a bundle decrypts to: the part's settings, bound to its place. */
export interface BundleContent {
  part: Part;
  epoch: number;
  version: number;
  data: unknown;
}

/** Orders bundles: a higher epoch wins, then a higher version. */
export function compareVersions(a: [number, number], b: [number, number] | null): number {
  if (b === null) return 1;
  return a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
}

/** Encrypts and signs one part's settings as a bundle. */
export function sealBundle(
  s: Pick<KeychainState, 'keychain'>,
  contentKey: Buffer,
  signer: KeyObject,
  c: BundleContent,
  createdAt: string,
  digest: string,
): BundleRow {
  const enc = encrypt(contentKey, Buffer.from(JSON.stringify(c), 'utf8'), bundleAad(s.keychain, c.part, c.epoch, c.version));
  const wire = { part: c.part, epoch: c.epoch, version: c.version, created_at: createdAt, ...enc };
  return { ...wire, signature: signWith(signer, bundlePayload(s.keychain, wire)), digest };
}

/** Opens a bundle under the content key; throws when it was changed or is not the bundle it says. */
export function openBundle(s: Pick<KeychainState, 'keychain'>, contentKey: Buffer, b: Omit<BundleRow, 'digest' | 'signature'>): BundleContent {
  const c = JSON.parse(decrypt(contentKey, b, bundleAad(s.keychain, b.part, b.epoch, b.version)).toString('utf8')) as BundleContent;
  if (c.part !== b.part || c.epoch !== b.epoch || c.version !== b.version) throw new Error('the bundle says it is another part or version');
  return c;
}

/**
 * The home's bundles: each part in scope, exported by the area that owns it, encrypted under
 * the content key and signed by the keychain's key. A part's version goes up when its settings
 * change (their digest under the content key), and past any version a member says it applied
 * (a home restored from a backup issues versions above the ones already out). Each new bundle is
 * a `config.keychain_bundled` event; the part's settings are read in the same transaction.
 */
export class BundleBuilder {
  readonly #state: KeychainStateRepo;
  readonly #members: MembersRepo;
  readonly #bundles: BundlesRepo;
  readonly #parts: CarriedParts;
  readonly #keys: KeyRing;
  readonly #ledger: Ledger;
  readonly #clock: Clock;

  constructor(deps: {
    state: KeychainStateRepo;
    members: MembersRepo;
    bundles: BundlesRepo;
    parts: CarriedParts;
    keys: KeyRing;
    ledger: Ledger;
    clock: Clock;
  }) {
    this.#state = deps.state;
    this.#members = deps.members;
    this.#bundles = deps.bundles;
    this.#parts = deps.parts;
    this.#keys = deps.keys;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  /** Brings the bundles of every part in scope up to date (the home only; nothing elsewhere). */
  async refresh(): Promise<void> {
    await this.#ledger.transact(
      async (trx, record) => {
        const s = await this.#state.lock(trx);
        if (s === null || s.role !== 'home') return;
        await this.refreshIn(trx, record, s);
      },
      { headFirst: true },
    );
  }

  async refreshIn(trx: Trx, record: RecordEvent, s: KeychainState): Promise<void> {
    const key = this.#keys.contentKey(s);
    const signer = this.#keys.signing(s);
    const members = await this.#members.list(trx);
    const held = new Map((await this.#bundles.list(trx)).map((b) => [b.part, b]));
    const at = this.#clock.now().toISOString();
    for (const part of s.scope) {
      const data = await this.#parts[part].export(trx);
      const digest = digestOf(key, data);
      const h = held.get(part);
      // The highest version of this epoch a member says it applied (a claim far above what this
      // home ever issued is not believed: no member can push the versions towards their limit).
      const ceiling = (h?.version ?? 0) + MAX_VERSION_JUMP;
      const floor = Math.max(
        0,
        ...members
          .map((m) => m.applied[part])
          .filter((a) => a !== undefined && a[0] === s.epoch && a[1] <= ceiling)
          .map((a) => a![1]),
      );
      if (h !== undefined && h.epoch === s.epoch && h.digest === digest && floor <= h.version) continue;
      const version = Math.max(h?.version ?? 0, floor) + 1;
      await this.#bundles.put(trx, sealBundle(s, key, signer, { part, epoch: s.epoch, version, data }, at, digest));
      await record({
        type: 'config.keychain_bundled',
        actor: 'keychain',
        reason: `${part} version ${version} issued to the keychain's members`,
        data: { part, version, epoch: s.epoch, ...(floor > (h?.version ?? 0) ? { above_applied: floor } : {}) },
      });
    }
  }

  /**
   * At a take-over: the bundles this install holds of the parts in `scope`, issued again by it
   * under the new epoch and signing key, at their versions (any bundle of a higher epoch wins over
   * the old home's); the others are forgotten.
   */
  async reissue(trx: Trx, s: KeychainState, epoch: number, signer: KeyObject, scope: readonly Part[]): Promise<Part[]> {
    const key = this.#keys.contentKey(s);
    const at = this.#clock.now().toISOString();
    const out: Part[] = [];
    await this.#bundles.keepOnly(trx, scope);
    for (const b of await this.#bundles.list(trx)) {
      const c = openBundle(s, key, b);
      await this.#bundles.put(trx, sealBundle(s, key, signer, { ...c, epoch }, at, b.digest));
      out.push(b.part);
    }
    return out;
  }
}
