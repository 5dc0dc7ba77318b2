import type { TestApp } from './app.ts';

/**
 * Adds a person (with the admin token, which acts as an owner) and signs them in with a password
 * for one person, answering their session token. Owners cannot hold a password: for an owner's
 * session use break-glass (`POST /v1/login` with the admin token while no mail is configured).
 */
export async function signedIn(ta: TestApp, email: string, role: 'admin' | 'viewer', name = email.split('@')[0]!): Promise<string> {
  const added = await ta.call('POST', '/v1/people', { body: { email, name, role } });
  if (added.status !== 201 && added.body?.error !== 'person_exists') throw new Error(`adding ${email}: ${JSON.stringify(added.body)}`);
  const given = await ta.call('POST', `/v1/people/${email}/password`, { body: { expires: '30d' } });
  if (given.status !== 201) throw new Error(`password for ${email}: ${JSON.stringify(given.body)}`);
  const session = await ta.call('POST', '/v1/auth/password', { token: null, body: { email, password: given.body.password } });
  if (session.status !== 200) throw new Error(`signing in ${email}: ${JSON.stringify(session.body)}`);
  return session.body.token as string;
}

/** A break-glass session of the admin token (owner rights), while no mail provider is set. */
export async function breakGlass(ta: TestApp): Promise<string> {
  const res = await ta.call('POST', '/v1/login', { token: null, body: { token: (await import('./app.ts')).ADMIN_TOKEN } });
  if (res.status !== 200 || res.body.break_glass !== true) throw new Error(`break-glass: ${JSON.stringify(res.body)}`);
  return res.body.token as string;
}
