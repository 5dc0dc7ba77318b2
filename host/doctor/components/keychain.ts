/** The keychain component of doctor: this install's place in its keychain and who it has not heard from. */
import type { KeychainView } from '../../keychain/view.service.ts';
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of the keychain: GET /v1/keychain's view, or null when the licence has no keychain. */
export type KeychainSeen = KeychainView | null;

const DOC = '(docs/keychain.md)';

export function describeKeychain(seen: KeychainSeen): Part {
  if (seen === null) return part('ok', 'no keychain: the licence has none');
  if (seen.role === 'none') return part('ok', 'not in a keychain');
  const refused = seen.parts.filter((p) => p.refused !== null);
  if (seen.role === 'member') {
    const home = seen.home;
    const name = home?.install ?? 'the home';
    if (home?.lost === true)
      return part(
        'fail',
        `the home ${name} has not answered since ${home.last_contact_at ?? 'pairing'}${home.last_problem === null ? '' : ` (${home.last_problem})`}; settings it carries are not updated`,
        `bring ${name} back, or have an owner of this install take over (POST /v1/keychain/home with take_over) ${DOC}`,
      );
    if (home !== null && home.last_problem !== null)
      return part(
        'warn',
        `the last poll of the home ${name} failed: ${home.last_problem}`,
        `check that ${name} runs and that this install reaches ${home.address ?? 'it'} ${DOC}`,
      );
    if (refused.length > 0)
      return part(
        'warn',
        `refused from the home: ${refused.map((p) => `${p.part} version ${p.refused!.version} (${p.refused!.reason})`).join('; ')}`,
        `see the keychain page; the home issues the next version ${DOC}`,
      );
    return part('ok', `a member of ${seen.keychain ?? 'its keychain'}, its home ${name} last heard ${home?.last_contact_at ?? 'never'}`);
  }
  const silent = seen.members.filter((m) => !m.self && (m.state === 'not_answering' || m.state === 'gone'));
  if (silent.length > 0) {
    const words = silent.map((m) => `${m.install} ${m.state === 'gone' ? 'gone' : 'not answering'} (last heard ${m.last_seen ?? 'never'})`);
    return part(
      'warn',
      `the home of ${plural(seen.members.length, 'member')}: ${words.join(', ')}`,
      `check that each runs and reaches this install; an owner removes a retired one (DELETE /v1/keychain/members/{install}) ${DOC}`,
    );
  }
  return part('ok', `the home of ${plural(seen.members.length, 'member')}, all answering`);
}
