// Certificates of a test bank, made with the openssl CLI: an issuing CA and leaf certificates for
// 127.0.0.1 valid over any window (one that expired yesterday, one that expires in three days),
// signed with `openssl ca`, which can date a certificate in the past. No test runtime in here, so
// the eval uses it too.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Teardowns } from './daemon.ts';

/** A leaf certificate with its key, and the chain a server presents (leaf then CA), as PEM. */
export interface Leaf {
  key: string;
  cert: string;
  chain: string;
  subject: string;
  notAfter: Date;
}

const DAY = 86400_000;
const CA_CONF = `[ ca ]
default_ca = test_ca
[ test_ca ]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[ any ]
commonName = supplied
organizationName = optional
[ leaf ]
basicConstraints = CA:FALSE
keyUsage = digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
`;

/** `YYYYMMDDHHMMSSZ`, as `openssl ca -startdate` takes it. */
const asn1 = (d: Date) => `${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;

export class TestCa {
  readonly dir: string;
  /** The CA's subject as the blackbox exporter prints an issuer: `CN=Test Bank Issuing CA,O=Test Bank`. */
  readonly issuer = 'CN=Test Bank Issuing CA,O=Test Bank';
  readonly caCert: string;
  #n = 0;

  /** A new CA (P-256, ten years) in a temp dir, removed with the teardowns. */
  constructor(t: Teardowns) {
    this.dir = mkdtempSync(path.join(tmpdir(), 'oncall-ca-'));
    t.teardown(() => rmSync(this.dir, { recursive: true, force: true }));
    writeFileSync(path.join(this.dir, 'ca.cnf'), CA_CONF);
    writeFileSync(path.join(this.dir, 'index.txt'), '');
    writeFileSync(path.join(this.dir, 'serial'), '1000\n');
    this.#openssl(
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt'].concat([
        '-days',
        '3650',
        '-subj',
        '/O=Test Bank/CN=Test Bank Issuing CA',
      ]),
    );
    this.caCert = readFileSync(path.join(this.dir, 'ca.crt'), 'utf8');
  }

  /** A leaf for `cn` (and 127.0.0.1) valid from a day before `notAfter` minus `days`, until `notAfter`. */
  leaf(cn: string, notAfter: Date, days = 90): Leaf {
    const n = ++this.#n;
    const notBefore = new Date(Math.min(Date.now() - DAY, notAfter.getTime() - days * DAY));
    this.#openssl([
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${n}.key`,
      '-out',
      `${n}.csr`,
      '-subj',
      `/O=Test Bank/CN=${cn}`,
    ]);
    this.#openssl(
      ['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.crt', '-keyfile', 'ca.key', '-in', `${n}.csr`, '-out', `${n}.crt`, '-notext'].concat([
        '-extensions',
        'leaf',
        '-startdate',
        asn1(notBefore),
        '-enddate',
        asn1(notAfter),
      ]),
    );
    const cert = readFileSync(path.join(this.dir, `${n}.crt`), 'utf8');
    return { key: readFileSync(path.join(this.dir, `${n}.key`), 'utf8'), cert, chain: cert + this.caCert, subject: `CN=${cn},O=Test Bank`, notAfter };
  }

  /** A leaf whose not-after is `days` from now (negative: expired that long ago), to the second. */
  leafIn(cn: string, days: number): Leaf {
    return this.leaf(cn, new Date(Math.floor((Date.now() + days * DAY) / 1000) * 1000));
  }

  #openssl(args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  }
}
