import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';
import type { Teardowns } from './daemon.ts';

/** A person the test provider knows: their claims, and their groups in the `groups` claim. */
export interface Account {
  email: string;
  name: string;
  /** Left out: the ID token carries no groups claim at all. */
  groups?: string[];
  email_verified?: boolean;
}

export const CLIENT_ID = 'oncall-console';
export const CLIENT_SECRET = 'oncall-client-secret-5b1e77a0';

/** How the token endpoint's ID token is spoiled, to see the service refuse it. */
export type Tamper = null | 'forged' | 'audience' | 'expired' | 'nonce';

export interface TestProvider {
  /** The issuer, `http://127.0.0.1:<port>`. */
  issuer: string;
  accounts: Map<string, Account>;
  /** Who signs in at the provider's next login (the test's stand-in for a person typing a password). */
  next: string;
  tamper: Tamper;
  /** Refresh tokens given with every sign-in. */
  refreshTokens: boolean;
  /** Every refresh is refused (`invalid_grant`), as when the person has been removed at the provider. */
  refuseRefresh: boolean;
  /** How many refreshes were asked for. */
  refreshes: number;
}

/** A browser of sorts: follows the provider's redirects with its cookies, stops at `stopAt`. */
export async function followProvider(start: string, stopAt: string): Promise<string> {
  const jar = new Map<string, string>();
  let url = start;
  for (let i = 0; i < 10; i++) {
    if (url.startsWith(stopAt)) return url;
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const next = res.headers.get('location');
    if (next === null) throw new Error(`the provider stopped at ${url}: ${res.status} ${await res.text()}`);
    url = new URL(next, url).toString();
  }
  throw new Error('too many redirects at the provider');
}

/** The provider's storage, in memory (its own in-memory adapter warns at every start). */
class MemoryAdapter {
  static readonly rows = new Map<string, Record<string, unknown>>();
  readonly #name: string;
  constructor(name: string) {
    this.#name = name;
  }
  #key(id: string): string {
    return `${this.#name}:${id}`;
  }
  async upsert(id: string, payload: Record<string, unknown>): Promise<void> {
    MemoryAdapter.rows.set(this.#key(id), payload);
  }
  async find(id: string): Promise<Record<string, unknown> | undefined> {
    return MemoryAdapter.rows.get(this.#key(id));
  }
  async findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
    for (const [k, v] of MemoryAdapter.rows) if (k.startsWith(`${this.#name}:`) && v.uid === uid) return v;
    return undefined;
  }
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }
  async consume(id: string): Promise<void> {
    const row = MemoryAdapter.rows.get(this.#key(id));
    if (row !== undefined) row.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string): Promise<void> {
    MemoryAdapter.rows.delete(this.#key(id));
  }
  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [k, v] of MemoryAdapter.rows) if (v.grantId === grantId) MemoryAdapter.rows.delete(k);
  }
}

const b64 = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');

function resign(jwt: string, key: KeyObject, change: (payload: Record<string, unknown>) => void): string {
  const [h, p] = jwt.split('.');
  const header = JSON.parse(Buffer.from(h!, 'base64url').toString()) as Record<string, unknown>;
  const payload = JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
  change(payload);
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/**
 * npm's oidc-provider on a loopback port, as the identity provider: one confidential client
 * (client_secret_basic, PKCE required), the `groups` claim, refresh tokens when asked, logins
 * finished by the test (`next`), and a token endpoint that can spoil its ID token (`tamper`):
 * signed with another key, another audience, expired, another nonce (re-signed with the
 * provider's own key, so only that check fails). Closed after the test.
 */
export async function startProvider(t: Teardowns, redirectUri: string, accounts: Record<string, Account>): Promise<TestProvider> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const signingKey = createPrivateKey({ key: jwk, format: 'jwk' });
  const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const state: TestProvider = {
    issuer,
    accounts: new Map(Object.entries(accounts)),
    next: Object.keys(accounts)[0]!,
    tamper: null,
    refreshTokens: false,
    refuseRefresh: false,
    refreshes: 0,
  };

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['test-cookie-key-0123456789'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    conformIdTokenClaims: false,
    scopes: ['openid', 'email', 'profile', 'offline_access'],
    claims: { openid: ['sub', 'groups'], email: ['email', 'email_verified'], profile: ['name'] },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: async (_ctx, id) => {
      const a = state.accounts.get(id);
      if (a === undefined) return undefined;
      return {
        accountId: id,
        claims: async () => ({
          sub: id,
          email: a.email,
          email_verified: a.email_verified ?? true,
          name: a.name,
          ...(a.groups === undefined ? {} : { groups: a.groups }),
        }),
      };
    },
    // Every login is consented to: the grant holds what was asked.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope('openid email profile offline_access');
      grant.addOIDCClaims(['email', 'email_verified', 'name', 'groups']);
      await grant.save();
      return grant;
    },
    issueRefreshToken: async () => state.refreshTokens,
    adapter: MemoryAdapter,
    ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, RefreshToken: 14 * 86400, Interaction: 600, Session: 86400, Grant: 86400 },
  });
  provider.use(async (ctx, next) => {
    if (ctx.path === '/token' && ctx.method === 'POST' && state.refuseRefresh) {
      state.refreshes++;
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant', error_description: 'the grant was revoked' };
      return;
    }
    await next();
    if (ctx.path !== '/token') return;
    const grantType = (ctx.oidc?.params as { grant_type?: string } | undefined)?.grant_type;
    if (grantType === 'refresh_token') state.refreshes++;
    const body = ctx.body as Record<string, unknown> | undefined;
    if (grantType !== 'authorization_code' || typeof body?.id_token !== 'string' || state.tamper === null) return;
    const now = Math.floor(Date.now() / 1000);
    const spoil: Record<Exclude<Tamper, null>, () => string> = {
      forged: () => resign(body.id_token as string, otherKey, () => {}),
      audience: () => resign(body.id_token as string, signingKey, (p) => (p.aud = 'someone-else')),
      expired: () => resign(body.id_token as string, signingKey, (p) => ((p.iat = now - 7200), (p.exp = now - 3600))),
      nonce: () => resign(body.id_token as string, signingKey, (p) => (p.nonce = 'not-the-nonce')),
    };
    ctx.body = { ...body, id_token: spoil[state.tamper]() };
  });
  const callback = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/interaction/')) {
      provider.interactionFinished(req, res, { login: { accountId: state.next } }, { mergeWithLastSubmission: false }).catch((e: unknown) => {
        res.statusCode = 500;
        res.end(String(e));
      });
      return;
    }
    void callback(req, res);
  });
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return state;
}
