import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { clip } from '../text.ts';
import type { DirectoryGroup } from './directory.ts';
import { candidateUrls, normaliseFingerprint } from './ldap-connection.ts';
import { discover, type Discovery } from './ldap-discovery.ts';
import { withDirectory } from './open-directory.ts';
import type { OidcSignIn } from './oidc-sign-in.service.ts';
import type { SsoSettingsStore } from './sso-store.ts';

export interface DiscoverBody {
  /** Several addresses fail over in order; a bare name tries `ldaps://` then `ldap://` with StartTLS. */
  addresses: string[];
  bind_dn: string;
  /** Omitted: the saved one, when the addresses and the account are the saved ones. */
  bind_password?: string;
  fingerprint?: string | null;
}

export interface TestReport {
  oidc: { ok: boolean; problem: string | null; issuer: string } | null;
  ldap: {
    ok: boolean;
    problem: string | null;
    url: string | null;
    tls: 'ldaps' | 'starttls' | null;
    mappings: Array<{ group: string; found: boolean }>;
  } | null;
}

/**
 * What an admin does with the settings besides saving them: discovery (nothing saved), a test of
 * the saved settings, and a search of the directory's groups. Discovery and the test are
 * recorded (`config.sso_discovered`, `config.sso_tested`), never with a secret.
 */
export class SsoAdmin {
  readonly #d: { store: SsoSettingsStore; oidc: Pick<OidcSignIn, 'test'>; ledger: Ledger; timeoutMs: number };

  constructor(deps: { store: SsoSettingsStore; oidc: Pick<OidcSignIn, 'test'>; ledger: Ledger; timeoutMs: number }) {
    this.#d = deps;
  }

  async discover(body: DiscoverBody, by: Principal): Promise<Discovery> {
    let fingerprint: string | null = null;
    if (body.fingerprint != null && body.fingerprint !== '') {
      fingerprint = normaliseFingerprint(body.fingerprint);
      if (fingerprint === null) throw new AppError('invalid_body', 'fingerprint must be a SHA-256 fingerprint (64 hex digits)');
    }
    let password = body.bind_password ?? '';
    if (password === '') {
      const saved = (await this.#d.store.load()).ldap;
      const same = saved !== null && saved.bind_dn === body.bind_dn && JSON.stringify(saved.urls) === JSON.stringify(candidateUrls(body.addresses));
      if (!same || saved.bind_password === null) throw new AppError('secret_required', 'bind_password is needed for these addresses and this account');
      password = saved.bind_password;
    }
    const found = await discover({ addresses: body.addresses, bind_dn: body.bind_dn, bind_password: password, fingerprint }, this.#d.timeoutMs);
    await this.#d.ledger.append({
      type: 'config.sso_discovered',
      actor: by.actor,
      reason: found.ok ? `directory discovered at ${found.found.urls.join(', ')} (nothing saved)` : `directory discovery: ${found.problem}`,
      data: {
        addresses: body.addresses,
        bind_dn: body.bind_dn,
        ok: found.ok,
        ...(found.ok ? { kind: found.found.kind, base_dn: found.found.base_dn } : { problem: found.problem }),
      },
    });
    return found;
  }

  async test(by: Principal): Promise<TestReport> {
    const s = await this.#d.store.load();
    const report: TestReport = { oidc: s.oidc === null ? null : await this.#d.oidc.test(s.oidc), ldap: null };
    if (s.ldap !== null) {
      try {
        report.ldap = await withDirectory(s.ldap, this.#d.timeoutMs, async (dir, conn) => ({
          ok: true,
          problem: null,
          url: conn.url,
          tls: conn.tls,
          mappings: await Promise.all(s.mappings.map(async (m) => ({ group: m.group, found: await dir.hasGroup(m.group) }))),
        }));
      } catch (err) {
        report.ldap = { ok: false, problem: clip(err instanceof Error ? err.message : String(err), 1000, '…'), url: null, tls: null, mappings: [] };
      }
    }
    await this.#d.ledger.append({
      type: 'config.sso_tested',
      actor: by.actor,
      reason: `single sign-on settings tested: ${[report.oidc && `provider ${report.oidc.ok ? 'ok' : 'failing'}`, report.ldap && `directory ${report.ldap.ok ? 'ok' : 'failing'}`].filter(Boolean).join(', ') || 'nothing configured'}`,
      data: { oidc: report.oidc, ldap: report.ldap },
    });
    return report;
  }

  async groups(q: string): Promise<DirectoryGroup[]> {
    const s = await this.#d.store.load();
    if (s.ldap === null) throw new AppError('directory_not_configured', 'no directory is configured');
    return withDirectory(s.ldap, this.#d.timeoutMs, (dir) => dir.searchGroups(q)).catch((err: unknown) => {
      if (err instanceof AppError) throw err;
      throw new AppError('directory_unavailable', clip(err instanceof Error ? err.message : String(err), 500, '…'));
    });
  }
}
