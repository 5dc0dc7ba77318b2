/** The autonomy component of doctor: autonomy.json as this host process reads it, against the file in force. */
import type { AutonomyFileStatus } from '../../governance/autonomy-file.service.ts';
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of autonomy.json (AutonomyFileService.status() fits as it is). */
export type AutonomySeen = AutonomyFileStatus;

const short = (sha: string | null) => (sha === null ? 'no file' : `sha256 ${sha.slice(0, 12)}…`);
const SHOWN = 10;

function granted(seen: AutonomySeen): string {
  const services = seen.in_force?.services ?? [];
  if (services.length === 0) return 'no service';
  const named = services.slice(0, SHOWN).map((s) => `${s.service} ${s.level}`);
  return `${plural(services.length, 'service')} (${named.join(', ')}${services.length > SHOWN ? ', …' : ''})`;
}

export function describeAutonomy(seen: AutonomySeen): Part {
  const inForce = seen.in_force?.sha256 ?? null;
  const mine = seen.state === 'good' || seen.state === 'bad' ? seen.sha256 : null;
  if (seen.problem !== null) {
    const kept = inForce === null ? 'no file grants any level' : `the last good file (${short(inForce)}) stays in force for ${granted(seen)}`;
    return part(
      'fail',
      `${seen.problem} (${short(seen.sha256)}); ${kept}`,
      'correct autonomy.json in SERVICE_CONFIG_DIR (docs/governance.md): it is read again on every tick, no restart needed',
    );
  }
  if (seen.state === 'unread') return part('warn', 'autonomy.json has not been read yet in this process', 'it is read at start and on every tick');
  if (mine !== inForce) {
    return part(
      'warn',
      `the levels in force come from ${inForce === null ? 'no autonomy.json' : `another autonomy.json (${short(inForce)})`} than this process reads (${seen.state === 'none' ? 'no SERVICE_CONFIG_DIR' : short(mine)}): another host process read a different file`,
      'give every host process the same autonomy.json (or none)',
    );
  }
  if (seen.state === 'none') return part('ok', 'no SERVICE_CONFIG_DIR: no autonomy.json, every level is set over the API');
  if (seen.state === 'absent') return part('ok', 'no autonomy.json in SERVICE_CONFIG_DIR: every level is set over the API');
  return part('ok', `autonomy.json (${short(mine)}) sets the level of ${granted(seen)}`);
}
