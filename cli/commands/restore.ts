import { Args, Flags } from '@oclif/core';
import { ServiceCommand, readConfig } from '../base.ts';

export interface RestoreResult {
  ok: boolean;
  file: string;
  engine: 'sqlite' | 'mysql';
  made_at: string;
  made_by: string;
  head: { seq: number; hash: string };
  before: { ok: boolean; checked: number };
  after: { ok: boolean; checked: number };
  moved_aside: string | null;
}

export default class Restore extends ServiceCommand {
  static override summary = 'Put a backup back into the data directory, verifying its ledger before and after';
  static override description =
    'Refuses while the service runs on the data directory (or, on MySQL, while any host holds a lease on the database). Verifies the ' +
    "backup's ledger up to the head it names, puts its files in place (with --replace, the files there now are moved aside, never deleted), " +
    'verifies again in place and says which head it restored. MySQL: load the dump taken with the backup first (docs/operations.md).';
  static override examples = [
    '<%= config.bin %> restore /var/backups/oncall/oncall-2026-11-27.tar.gz',
    '<%= config.bin %> restore oncall.tar.gz --replace --json',
  ];
  static override enableJsonFlag = true;
  static override args = { file: Args.string({ description: 'a file written by oncall backup', required: true }) };
  static override flags = {
    replace: Flags.boolean({ description: 'move an install already in the data directory aside (into replaced-<time>/)', default: false }),
  };

  async run(): Promise<RestoreResult> {
    const { args, flags } = await this.parse(Restore);
    const config = readConfig();
    const [{ restoreBackup }, { systemClock }, { asBackupProblem }] = await Promise.all([
      import('../../host/backup/restore.ts'),
      import('../../host/clock.ts'),
      import('../backup-ops.ts'),
    ]);
    const r = await restoreBackup(config, args.file, { replace: flags.replace }, systemClock).catch(asBackupProblem);
    const m = r.manifest;
    this.log(`backup of ${m.created_at} by oncall ${m.service_version} (${m.engine}), head seq ${m.head.seq}`);
    this.log(`before: the backup's ledger verifies (${r.before.checked} events)`);
    if (r.movedAside !== null) this.log(`the install that was there is in ${r.movedAside}`);
    this.log(`after: the restored ledger verifies (${r.after.checked} events)`);
    this.log(`restored head seq ${r.after.head.seq} hash ${r.after.head.hash} into ${config.dataDir}`);
    return this.outcome(
      {
        ok: true,
        file: args.file,
        engine: m.engine,
        made_at: m.created_at,
        made_by: m.service_version,
        head: r.after.head,
        before: { ok: r.before.ok, checked: r.before.checked },
        after: { ok: r.after.ok, checked: r.after.checked },
        moved_aside: r.movedAside,
      },
      true,
    );
  }
}
