import { Args } from '@oclif/core';
import { ServiceCommand, readConfig } from '../base.ts';

export interface BackupResult {
  ok: boolean;
  file: string;
  engine: 'sqlite' | 'mysql';
  head: { seq: number; hash: string };
  verify: { ok: boolean; problem: string | null; first_bad_seq: number | null; checked: number } | null;
  files: string[];
}

export default class Backup extends ServiceCommand {
  static override summary = 'Write a consistent backup of the install while the service runs';
  static override description =
    "SQLite: the database through SQLite's online backup API (the service keeps writing), verified before it is written, with the secret key " +
    "(unless SERVICE_SECRET_KEY holds it) and the ledger checkpoint file, as one gzip'd tar, mode 0600. It holds the key that opens the " +
    "install's secrets: keep it like the key itself. MySQL: the key, the checkpoints and the ledger head; take the database with " +
    'mysqldump --single-transaction right after it (docs/operations.md). Exits 1 when the copied ledger does not verify (the file is still written).';
  static override examples = ['<%= config.bin %> backup /var/backups/oncall/oncall-$(date +%F).tar.gz', '<%= config.bin %> backup ./oncall.tar.gz --json'];
  static override enableJsonFlag = true;
  static override args = { file: Args.string({ description: 'the backup file to write (must not exist)', required: true }) };

  async run(): Promise<BackupResult> {
    const { args } = await this.parse(Backup);
    const config = readConfig();
    const [{ makeBackup }, { systemClock }, { asBackupProblem }] = await Promise.all([
      import('../../host/backup/backup.ts'),
      import('../../host/clock.ts'),
      import('../backup-ops.ts'),
    ]);
    const { file, manifest } = await makeBackup(config, args.file, systemClock).catch(asBackupProblem);
    const m = manifest;
    this.log(`backup written: ${file} (${m.files.join(', ')})`);
    this.log(`ledger head seq ${m.head.seq} hash ${m.head.hash}`);
    if (m.verify !== null)
      this.log(
        m.verify.ok ? `the copy verifies (${m.verify.checked} events)` : `the copy does NOT verify: ${m.verify.problem} at seq ${m.verify.first_bad_seq}`,
      );
    if (m.engine === 'mysql') this.log('MySQL: now take the database with mysqldump --single-transaction (docs/operations.md); keep both together');
    if (m.secret_key === 'environment') this.log('the secret key is SERVICE_SECRET_KEY and not in the file: keep it elsewhere');
    return this.outcome({ ok: m.verify?.ok ?? true, file, engine: m.engine, head: m.head, verify: m.verify, files: m.files }, m.verify?.ok ?? true);
  }
}
