import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Teardowns } from './daemon.ts';
import { makeCertificate } from './smtp.ts';
import { freePort } from './wait.ts';

/** Debian's OpenLDAP server (installed by .ci/run: slapd, ldap-utils). */
export const SLAPD_BIN = '/usr/sbin/slapd';
export const SLAPADD_BIN = '/usr/sbin/slapadd';
export const slapdMissing: string | null =
  existsSync(SLAPD_BIN) && existsSync(SLAPADD_BIN) ? null : `${SLAPD_BIN} is not installed (apt-get install slapd ldap-utils)`;

export const SUFFIX = 'dc=bank,dc=example';
export const READER_DN = `cn=oncall-reader,ou=service,${SUFFIX}`;
export const READER_PASSWORD = 'reader-secret-7f2c9d41';
/** Every test person's password is their uid followed by this. */
export const PASSWORD_SUFFIX = '-Pa55word!';
export const passwordOf = (uid: string): string => `${uid}${PASSWORD_SUFFIX}`;
/** How many entries one search without paging may return (so paging is needed to read everyone). */
export const SIZE_LIMIT = 50;
/** Filler people beyond the named ones, more than SIZE_LIMIT. */
export const FILLERS = 120;

export interface RunningSlapd {
  /** `ldaps://127.0.0.1:<port>` */
  ldaps: string;
  /** `ldap://127.0.0.1:<port>` (StartTLS offered) */
  ldap: string;
  /** The server certificate's SHA-256 fingerprint, `AB:CD:…`. */
  fingerprint: string;
  certPem: string;
  output(): string;
  /** Runs ldapmodify (as the root DN) with an LDIF of changes. */
  modify(ldif: string): void;
}

export interface Person {
  uid: string;
  cn: string;
  mail?: string;
  locked?: boolean;
  posix?: { uidNumber: number };
}

/** The named people of the test directory. */
export const PEOPLE: Person[] = [
  { uid: 'ada', cn: 'Ada Lovelace', mail: 'ada@bank.example' },
  { uid: 'grace', cn: 'Grace Hopper', mail: 'grace@bank.example' },
  { uid: 'linus', cn: 'Linus Locked', mail: 'linus@bank.example', locked: true },
  { uid: 'deep', cn: 'Deep Nested', mail: 'deep@bank.example' },
  { uid: 'deeper', cn: 'Deeper Nested', mail: 'deeper@bank.example' },
  { uid: 'ken', cn: 'Ken Thompson', mail: 'ken@bank.example', posix: { uidNumber: 10001 } },
  { uid: 'nomail', cn: 'No Mail' },
  { uid: 'outsider', cn: 'Out Sider', mail: 'outsider@elsewhere.example' },
];

const dnOf = (uid: string): string => `uid=${uid},ou=people,${SUFFIX}`;
export const personDn = dnOf;
export const groupDn = (cn: string): string => `cn=${cn},ou=groups,${SUFFIX}`;

function entries(): string {
  const out: string[] = [];
  const add = (dn: string, lines: string[]) => out.push([`dn: ${dn}`, ...lines].join('\n'));
  add(SUFFIX, ['objectClass: dcObject', 'objectClass: organization', 'dc: bank', 'o: Example Bank']);
  for (const ou of ['service', 'people', 'groups', 'policies']) add(`ou=${ou},${SUFFIX}`, ['objectClass: organizationalUnit', `ou: ${ou}`]);
  add(`cn=default,ou=policies,${SUFFIX}`, ['objectClass: organizationalRole', 'objectClass: pwdPolicy', 'cn: default', 'pwdAttribute: userPassword']);
  add(READER_DN, ['objectClass: organizationalRole', 'objectClass: simpleSecurityObject', 'cn: oncall-reader', `userPassword: ${READER_PASSWORD}`]);
  const person = (p: Person) =>
    add(dnOf(p.uid), [
      'objectClass: inetOrgPerson',
      ...(p.posix ? ['objectClass: posixAccount', `uidNumber: ${p.posix.uidNumber}`, 'gidNumber: 5000', `homeDirectory: /home/${p.uid}`] : []),
      `uid: ${p.uid}`,
      `cn: ${p.cn}`,
      `sn: ${p.cn.split(' ').at(-1)}`,
      ...(p.mail ? [`mail: ${p.mail}`] : []),
      `userPassword: ${passwordOf(p.uid)}`,
      ...(p.locked ? ['pwdAccountLockedTime: 000001010000Z'] : []),
    ]);
  PEOPLE.forEach(person);
  const fillers = Array.from({ length: FILLERS }, (_, i) => `p${String(i + 1).padStart(3, '0')}`);
  for (const uid of fillers) person({ uid, cn: `Filler ${uid}`, mail: `${uid}@bank.example` });
  const group = (cn: string, members: string[]) => add(groupDn(cn), ['objectClass: groupOfNames', `cn: ${cn}`, ...members.map((m) => `member: ${m}`)]);
  group('oncall-owners', [dnOf('ada')]);
  group('oncall-admins', [dnOf('grace'), dnOf('linus'), dnOf('nomail'), dnOf('outsider')]);
  group('fillers', fillers.map(dnOf));
  // A chain nine deep: deep is in nest1, nest1 in nest2, … nest8 in nest9. deeper only in nest2.
  group('nest1', [dnOf('deep')]);
  group('nest2', [groupDn('nest1'), dnOf('deeper')]);
  for (let i = 3; i <= 9; i++) group(`nest${i}`, [groupDn(`nest${i - 1}`)]);
  add(groupDn('ops'), ['objectClass: posixGroup', 'cn: ops', 'gidNumber: 5000', 'memberUid: ken']);
  return out.join('\n\n') + '\n';
}

/**
 * Debian's slapd on two loopback ports (ldaps:// and ldap:// with StartTLS), with a self-signed
 * certificate made by the test, the password policy overlay (a locked account), a size limit of
 * SIZE_LIMIT entries without paging, and the test directory above loaded with slapadd. Stopped
 * and removed after the test.
 */
export async function startSlapd(t: Teardowns): Promise<RunningSlapd> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-slapd-'));
  mkdirSync(path.join(dir, 'db'));
  const cert = makeCertificate();
  const [ldapsPort, ldapPort] = [await freePort(), await freePort()];
  const conf = path.join(dir, 'slapd.conf');
  writeFileSync(
    conf,
    [
      ...['core', 'cosine', 'inetorgperson', 'nis'].map((s) => `include /etc/ldap/schema/${s}.schema`),
      'modulepath /usr/lib/ldap',
      'moduleload back_mdb',
      'moduleload ppolicy',
      `pidfile ${dir}/slapd.pid`,
      `argsfile ${dir}/slapd.args`,
      `TLSCertificateFile ${cert.certFile}`,
      `TLSCertificateKeyFile ${cert.keyFile}`,
      `sizelimit size.soft=${SIZE_LIMIT} size.hard=${SIZE_LIMIT} size.prtotal=unlimited`,
      'database mdb',
      `suffix "${SUFFIX}"`,
      `rootdn "cn=admin,${SUFFIX}"`,
      'rootpw admin-secret',
      `directory ${dir}/db`,
      'maxsize 67108864',
      'overlay ppolicy',
      `ppolicy_default "cn=default,ou=policies,${SUFFIX}"`,
      'access to attrs=userPassword by anonymous auth by self write by * none',
      'access to * by * read',
    ].join('\n') + '\n',
  );
  const ldif = path.join(dir, 'data.ldif');
  writeFileSync(ldif, entries());
  const added = spawnSync(SLAPADD_BIN, ['-f', conf, '-l', ldif], { encoding: 'utf8' });
  if (added.status !== 0) throw new Error(`slapadd failed: ${added.stderr}`);

  const ldaps = `ldaps://127.0.0.1:${ldapsPort}`;
  const ldap = `ldap://127.0.0.1:${ldapPort}`;
  let out = '';
  const child: ChildProcess = spawn(SLAPD_BIN, ['-f', conf, '-h', `${ldaps}/ ${ldap}/`, '-d', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-8000)));
  child.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-8000)));
  const killer = () => child.kill('SIGKILL');
  process.once('exit', killer);
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    process.off('exit', killer);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(cert.dir, { recursive: true, force: true });
  });
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`slapd exited: ${out}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port: ldapsPort, rejectUnauthorized: false }, () => (s.end(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error(`slapd not up after 20 s: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const certPem = readFileSync(cert.certFile, 'utf8');
  return {
    ldaps,
    ldap,
    certPem,
    fingerprint: new X509Certificate(certPem).fingerprint256,
    output: () => out,
    modify: (changes: string) => {
      const r = spawnSync('ldapmodify', ['-x', '-H', ldap, '-ZZ', '-D', `cn=admin,${SUFFIX}`, '-w', 'admin-secret'], {
        input: changes,
        encoding: 'utf8',
        env: { ...process.env, LDAPTLS_REQCERT: 'never' },
      });
      if (r.status !== 0) throw new Error(`ldapmodify failed: ${r.stderr}`);
    },
  };
}
