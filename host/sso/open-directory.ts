import { BindRefused, close, connect, type Connected } from './ldap-connection.ts';
import { Directory } from './directory.ts';
import type { LdapSettings } from './sso-settings.ts';

/**
 * Runs `fn` on the directory of the saved settings, bound as the service's own account over
 * TLS (failing over along the addresses), and closes the connection whatever happens.
 */
export async function withDirectory<T>(ldap: LdapSettings, timeoutMs: number, fn: (dir: Directory, conn: Connected) => Promise<T>): Promise<T> {
  const conn = await connect(ldap.urls, { fingerprint: ldap.fingerprint, timeoutMs, bind: { dn: ldap.bind_dn, password: ldap.bind_password ?? '' } });
  try {
    return await fn(new Directory(conn.client, ldap), conn);
  } finally {
    await close(conn);
  }
}

/** Binds as a person to check their password, on a connection of its own; true when the directory accepts it. */
export async function passwordAccepted(ldap: LdapSettings, dn: string, password: string, timeoutMs: number): Promise<boolean> {
  try {
    const conn = await connect(ldap.urls, { fingerprint: ldap.fingerprint, timeoutMs, bind: { dn, password } });
    await close(conn);
    return true;
  } catch (err) {
    if (err instanceof BindRefused) return false;
    throw err;
  }
}
