import { fingerprintOfRaw } from './crypto.ts';
import type { KeychainDeps } from './deps.ts';
import type { MemberRow } from './members.repo.ts';
import { PARTS, type Part } from './parts.ts';
import type { Demoted } from './state.repo.ts';
import { takeOverAllowedAt } from './take-over.service.ts';
import { WINDOWS } from './windows.ts';

export type MemberState = 'pairing' | 'active' | 'not_answering' | 'gone';

export interface MemberView {
  install: string;
  fingerprint: string;
  address: string | null;
  state: MemberState;
  last_seen: string | null;
  version: string | null;
  paired_at: string;
  own: Part[];
  /** Per part, the version it last said it applied (of the current epoch), else null. */
  applied: Partial<Record<Part, number | null>>;
  /** This install itself (in a member's list). */
  self: boolean;
}

export interface HomeView {
  install: string;
  fingerprint: string;
  address: string | null;
  version: string | null;
  self: boolean;
  /** A member: its last verified answer from the home, why the last poll failed, and when it may take over. */
  last_contact_at: string | null;
  last_problem: string | null;
  lost: boolean;
  take_over_allowed_at: string | null;
}

export interface PartView {
  part: Part;
  carried: boolean;
  own: boolean;
  epoch: number | null;
  version: number | null;
  /** The home: when this version was issued; a member: when it was applied. */
  at: string | null;
  refused: { epoch: number; version: number; reason: string; at: string } | null;
}

/** GET /v1/keychain. */
export interface KeychainView {
  role: 'none' | 'home' | 'member';
  keychain: string | null;
  epoch: number | null;
  /** This install: its name and fingerprint in the keychain. */
  install: string | null;
  fingerprint: string;
  keychain_fingerprint: string | null;
  home: HomeView | null;
  members: MemberView[];
  scope: Part[];
  own: Array<{ install: string; part: Part }>;
  parts: PartView[];
  site_keys: Array<{ id: string; created_at: string; created_by: string; expires_at: string }>;
  installs: { used: number; allowed: number | null } | null;
  demoted: Demoted | null;
}

/** A member's state from when the home last heard from it (derived at read time: nothing is removed by itself). */
export function memberState(m: Pick<MemberRow, 'last_seen_at' | 'paired_at'>, nowMs: number): MemberState {
  const heard = Date.parse(m.last_seen_at ?? m.paired_at);
  const silent = nowMs - heard;
  if (silent >= WINDOWS.goneMs) return 'gone';
  if (silent >= WINDOWS.notAnsweringMs) return 'not_answering';
  return m.last_seen_at === null ? 'pairing' : 'active';
}

/** What GET /v1/keychain answers: the home's or the member's view (docs/keychain.md). */
export class ViewService {
  readonly #d: KeychainDeps;

  constructor(deps: KeychainDeps) {
    this.#d = deps;
  }

  async view(): Promise<KeychainView> {
    const allowance = await this.#d.gate.require();
    const s = await this.#d.state.get();
    const fingerprint = this.#d.keys.fingerprint;
    if (s === null) {
      return {
        role: 'none',
        keychain: null,
        epoch: null,
        install: null,
        fingerprint,
        keychain_fingerprint: null,
        home: null,
        members: [],
        scope: [],
        own: [],
        parts: [],
        site_keys: [],
        installs: null,
        demoted: null,
      };
    }
    const now = this.#d.clock.now().getTime();
    const rows = await this.#d.members.list();
    const members: MemberView[] = rows.map((m) => ({
      install: m.name,
      fingerprint: m.fingerprint,
      address: m.address,
      state: memberState(m, now),
      last_seen: m.last_seen_at,
      version: m.version,
      paired_at: m.paired_at,
      own: m.own,
      applied: Object.fromEntries(PARTS.filter((p) => s.scope.includes(p)).map((p) => [p, m.applied[p]?.[0] === s.epoch ? m.applied[p]![1] : null])),
      self: m.fingerprint === fingerprint,
    }));
    const bundles = new Map((await this.#d.bundles.list()).map((b) => [b.part, b]));
    const base = {
      keychain: s.keychain,
      epoch: s.epoch,
      install: s.name,
      fingerprint,
      keychain_fingerprint: fingerprintOfRaw(s.sign_key),
      scope: s.scope,
      demoted: s.demoted,
    };
    if (s.role === 'home') {
      return {
        ...base,
        role: 'home',
        home: {
          install: s.name,
          fingerprint,
          address: s.address,
          version: this.#d.keys.self(s).version,
          self: true,
          last_contact_at: null,
          last_problem: null,
          lost: false,
          take_over_allowed_at: null,
        },
        members,
        own: rows.flatMap((m) => m.own.map((part) => ({ install: m.name, part }))),
        parts: PARTS.map((part) => {
          const b = bundles.get(part);
          const carried = s.scope.includes(part);
          return {
            part,
            carried,
            own: false,
            epoch: carried ? (b?.epoch ?? null) : null,
            version: carried ? (b?.version ?? null) : null,
            at: carried ? (b?.created_at ?? null) : null,
            refused: null,
          };
        }),
        site_keys: (await this.#d.siteKeys.open(now)).map((k) => ({
          id: k.id,
          created_at: k.created_at,
          created_by: k.created_by,
          expires_at: new Date(k.expires_ms).toISOString(),
        })),
        installs: { used: rows.length + 1, allowed: allowance.installs },
      };
    }
    const applied = new Map((await this.#d.applied.list()).map((a) => [a.part, a]));
    const allowed = takeOverAllowedAt(s);
    const home = s.home!;
    return {
      ...base,
      role: 'member',
      home: {
        install: home.name,
        fingerprint: home.fingerprint,
        address: home.address,
        version: home.version,
        self: false,
        last_contact_at: s.last_contact_at,
        last_problem: s.last_problem,
        lost: now >= allowed,
        take_over_allowed_at: new Date(allowed).toISOString(),
      },
      members,
      own: s.own.map((part) => ({ install: s.name, part })),
      parts: PARTS.map((part) => {
        const a = applied.get(part);
        return {
          part,
          carried: s.scope.includes(part) && !s.own.includes(part),
          own: s.own.includes(part),
          epoch: a?.applied_epoch ?? null,
          version: a?.applied_version ?? null,
          at: a?.applied_at ?? null,
          refused:
            a === undefined || a.refused_reason === null
              ? null
              : { epoch: a.refused_epoch!, version: a.refused_version!, reason: a.refused_reason, at: a.refused_at! },
        };
      }),
      site_keys: [],
      installs: null,
    };
  }
}
