#!/usr/bin/env node
/**
 * Makes a vendor key pair and signs licences with it, the way the service verifies them.
 *
 *   node examples/licence/sign-licence.ts keygen <dir>                 writes <dir>/vendor.key (0600) and <dir>/vendor.pub
 *   node examples/licence/sign-licence.ts sign <vendor.key> <licence.json>   prints the signed licence
 *
 * The service accepts licences signed by its built-in vendor key or by the key given in
 * SERVICE_LICENCE_PUBKEY (the contents of vendor.pub).
 */
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { signedMessage, type Licence } from '../../host/licence/licence.ts';

const [command, a, b] = process.argv.slice(2);

if (command === 'keygen' && a !== undefined) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  writeFileSync(path.join(a, 'vendor.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(path.join(a, 'vendor.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  process.stdout.write(`wrote ${path.join(a, 'vendor.key')} and ${path.join(a, 'vendor.pub')}\n`);
} else if (command === 'sign' && a !== undefined && b !== undefined) {
  const key = createPrivateKey(readFileSync(a, 'utf8'));
  const { signature: _old, ...unsigned } = JSON.parse(readFileSync(b, 'utf8')) as Licence;
  const signature = sign(null, Buffer.from(signedMessage(unsigned), 'utf8'), key).toString('base64');
  process.stdout.write(JSON.stringify({ ...unsigned, signature }, null, 2) + '\n');
} else {
  process.stderr.write('usage: sign-licence.ts keygen <dir> | sign <vendor.key> <licence.json>\n');
  process.exit(2);
}
