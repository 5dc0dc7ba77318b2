import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeCertificate } from './smtp.ts';

/**
 * Debian's Samba as an Active Directory domain controller, for the directory tests: provisioned
 * by `samba-tool domain provision` into a temp dir, filled offline with `ldbadd`, and run in a
 * network namespace of the test's own (`ip netns add`), so that its fixed ports (389, 636) never
 * clash with anything on the machine. The test reaches it through a bridge: a node process inside
 * the namespace listening on a Unix socket, and a loopback TCP port here piping to that socket.
 * Nothing leaves the machine's loopback and the namespace's own.
 */

export const SAMBA_TOOL = '/usr/bin/samba-tool';
export const SAMBA = '/usr/sbin/samba';
export const LDBADD = '/usr/bin/ldbadd';
export const IP = '/usr/sbin/ip';

function missingTool(): string | null {
  for (const [bin, pkg] of [
    [SAMBA_TOOL, 'samba-ad-dc samba-ad-provision'],
    [SAMBA, 'samba'],
    [LDBADD, 'ldb-tools'],
    [IP, 'iproute2'],
  ] as const) {
    if (!existsSync(bin)) return `${bin} is not installed (apt-get install ${pkg})`;
  }
  if (!existsSync('/usr/share/samba/setup/ad-schema')) return 'the AD schema files are missing (apt-get install samba-ad-provision)';
  if (process.getuid?.() !== 0) return 'a network namespace needs root';
  return null;
}
export const sambaMissing: string | null = missingTool();

export const REALM = 'BANK.EXAMPLE';
export const DOMAIN = 'BANK';
export const BASE = 'DC=bank,DC=example';
export const OU = `OU=OnCall,${BASE}`;
export const READER = { dn: `CN=oncall-reader,${OU}`, password: 'Reader-Pa55word!' };
export const ADMIN_PASSWORD = 'Admin-Pa55word!9';
/** Members of the big group: more than AD's 1,500 values per read. */
export const BIG = 1600;

export interface AdUser {
  sam: string;
  name: string;
  mail?: string;
  password?: string;
  disabled?: boolean;
  groups: string[];
}

export const AD_USERS: AdUser[] = [
  { sam: 'ada', name: 'Ada Lovelace', mail: 'ada@bank.example', password: 'Ada-Pa55word!', groups: ['OnCall Owners'] },
  { sam: 'grace', name: 'Grace Hopper', mail: 'grace@bank.example', password: 'Grace-Pa55word!', groups: ['Payments Team'] },
  { sam: 'linus', name: 'Linus Disabled', mail: 'linus@bank.example', password: 'Linus-Pa55word!', disabled: true, groups: ['OnCall Owners'] },
];

export interface RunningSamba {
  /** `ldaps://127.0.0.1:<bridge port>` */
  ldaps: string;
  /** `ldap://127.0.0.1:<bridge port>` (StartTLS) */
  ldap: string;
  fingerprint: string;
  output(): string;
  stop(): Promise<void>;
}

const b64pw = (pw: string): string => Buffer.from(`"${pw}"`, 'utf16le').toString('base64');

function ldif(): string {
  const out: string[] = [];
  const add = (dn: string, attrs: Array<[string, string]>) => out.push([`dn: ${dn}`, ...attrs.map(([k, v]) => `${k}: ${v}`)].join('\n'));
  add(OU, [['objectClass', 'organizationalUnit']]);
  const user = (cn: string, sam: string, extra: Array<[string, string]>) =>
    add(`CN=${cn},${OU}`, [['objectClass', 'user'], ['sAMAccountName', sam], ['userPrincipalName', `${sam}@bank.example`], ...extra]);
  user('oncall-reader', 'oncall-reader', [
    ['unicodePwd:', b64pw(READER.password)],
    ['userAccountControl', '66048'],
  ]);
  for (const u of AD_USERS) {
    user(u.name, u.sam, [
      ['displayName', u.name],
      ...(u.mail ? ([['mail', u.mail]] as Array<[string, string]>) : []),
      ['unicodePwd:', b64pw(u.password!)],
      // 512 a normal account, 514 with ACCOUNTDISABLE (2).
      ['userAccountControl', u.disabled ? '514' : '512'],
    ]);
  }
  const bigMembers: string[] = [];
  for (let i = 1; i <= BIG; i++) {
    const sam = `u${String(i).padStart(4, '0')}`;
    // 544: a normal account that needs no password (never signs in; only a member here).
    user(sam, sam, [
      ['mail', `${sam}@bank.example`],
      ['userAccountControl', '544'],
    ]);
    bigMembers.push(`CN=${sam},${OU}`);
  }
  const group = (name: string, members: string[]) =>
    add(`CN=${name},${OU}`, [['objectClass', 'group'], ['sAMAccountName', name.replace(/\s+/g, '')], ...members.map((m): [string, string] => ['member', m])]);
  const membersOf = (g: string) => AD_USERS.filter((u) => u.groups.includes(g)).map((u) => `CN=${u.name},${OU}`);
  group('OnCall Owners', membersOf('OnCall Owners'));
  group('Payments Team', membersOf('Payments Team'));
  // Nested: Payments Team is in OnCall Admins.
  group('OnCall Admins', [`CN=Payments Team,${OU}`]);
  group('All Staff', bigMembers);
  return out.join('\n\n') + '\n';
}

/** The bridge inside the namespace: a Unix socket per port, each piping to 127.0.0.1:<port> there. */
const INNER_BRIDGE = `
const net = require('node:net');
for (const spec of process.argv.slice(1)) {
  const [sock, port] = spec.split('=');
  net.createServer((c) => { const s = net.connect(Number(port), '127.0.0.1'); c.pipe(s).pipe(c); s.on('error', () => c.destroy()); c.on('error', () => s.destroy()); }).listen(sock);
}
`;

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Provisions, fills and starts the domain controller; `stop()` undoes it all. */
export async function startSamba(): Promise<RunningSamba> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-samba-'));
  const ns = `oncall-ad-${randomBytes(4).toString('hex')}`;
  const cert = makeCertificate();
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  let out = '';
  let nsMade = false;
  const stop = async () => {
    for (const s of servers) s.close();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(children.map((c) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())))));
    if (nsMade) spawnSync(IP, ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(cert.dir, { recursive: true, force: true });
  };
  try {
    run(SAMBA_TOOL, [
      'domain',
      'provision',
      `--realm=${REALM}`,
      `--domain=${DOMAIN}`,
      '--server-role=dc',
      '--dns-backend=NONE',
      `--adminpass=${ADMIN_PASSWORD}`,
      `--targetdir=${dir}`,
    ]);
    const conf = path.join(dir, 'etc', 'smb.conf');
    chmodSync(cert.keyFile, 0o600);
    const extra = [
      'server services = ldap',
      'interfaces = lo',
      'bind interfaces only = yes',
      `log file = ${dir}/samba.log`,
      `pid directory = ${dir}`,
      `winbindd socket directory = ${dir}/winbindd`,
      `ntp signd socket directory = ${dir}/ntp_signd`,
      'tls enabled = yes',
      `tls keyfile = ${cert.keyFile}`,
      `tls certfile = ${cert.certFile}`,
      'tls cafile = ',
    ];
    writeFileSync(
      conf,
      readFileSync(conf, 'utf8')
        .replace(/^\s*server services = .*$/m, '')
        .replace(/^\s*interfaces = .*$/m, '')
        .replace(/^\s*log file = .*$/m, '')
        .replace('[global]', `[global]\n${extra.map((l) => `\t${l}`).join('\n')}`),
    );
    const data = path.join(dir, 'oncall.ldif');
    writeFileSync(data, ldif());
    run(LDBADD, ['-H', path.join(dir, 'private', 'sam.ldb'), data]);

    run(IP, ['netns', 'add', ns]);
    nsMade = true;
    run(IP, ['netns', 'exec', ns, IP, 'link', 'set', 'lo', 'up']);
    const samba = spawn(IP, ['netns', 'exec', ns, SAMBA, '-i', '-M', 'single', '-s', conf, '--debug-stdout'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(samba);
    samba.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-8000)));
    samba.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-8000)));
    const socks = { 636: path.join(dir, 'ldaps.sock'), 389: path.join(dir, 'ldap.sock') };
    const bridge = spawn(IP, ['netns', 'exec', ns, process.execPath, '-e', INNER_BRIDGE, `${socks[636]}=636`, `${socks[389]}=389`], { stdio: 'ignore' });
    children.push(bridge);
    process.once('exit', () => children.forEach((c) => c.kill('SIGKILL')));
    const ports: Record<number, number> = {};
    for (const [port, sock] of Object.entries(socks)) {
      const server = createServer((c) => {
        const s = createConnection(sock);
        c.pipe(s).pipe(c);
        s.on('error', () => c.destroy());
        c.on('error', () => s.destroy());
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      servers.push(server);
      ports[Number(port)] = (server.address() as { port: number }).port;
    }
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (samba.exitCode !== null) throw new Error(`samba exited: ${out}`);
      const up = await new Promise<boolean>((resolve) => {
        const s = tlsConnect({ host: '127.0.0.1', port: ports[636]!, rejectUnauthorized: false }, () => (s.end(), resolve(true)));
        s.once('error', () => resolve(false));
      });
      if (up) break;
      if (Date.now() > deadline) throw new Error(`samba not up after 60 s: ${out}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      ldaps: `ldaps://127.0.0.1:${ports[636]}`,
      ldap: `ldap://127.0.0.1:${ports[389]}`,
      fingerprint: new X509Certificate(readFileSync(cert.certFile)).fingerprint256,
      output: () => out,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
