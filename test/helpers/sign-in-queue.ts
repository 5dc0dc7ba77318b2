import { ADMIN_TOKEN } from './app.ts';

/** A person with a password on a service that is operating: what the sign-in queue tests sign in as. */
export const hostNeeds = {
  EMAIL: 'ada@bank.example',
  /** Adds Ada (admin) and gives her a password; answers it. */
  async password(base: string, token = ADMIN_TOKEN): Promise<string> {
    const call = (method: string, path: string, body: unknown) =>
      fetch(base + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const added = await call('POST', '/v1/people', { email: this.EMAIL, name: 'Ada', role: 'admin' });
    if (added.status !== 201 && added.status !== 409) throw new Error(`adding Ada: ${added.status} ${await added.text()}`);
    const given = await call('POST', `/v1/people/${encodeURIComponent(this.EMAIL)}/password`, { expires: '30d' });
    if (given.status !== 201) throw new Error(`giving a password: ${given.status} ${await given.text()}`);
    return ((await given.json()) as { password: string }).password;
  },
};

/**
 * 12 addresses send 10 wrong passwords each, two at a time per address, sending the next as soon
 * as one is answered (a refused one, 503, is sent again after 20 ms): the queue stays full; and
 * a burst of three more per address at the start. Once
 * every address has had a wrong password answered, a person signs in from a 13th address.
 * Answers how many wrong passwords were answered while the valid sign-in waited.
 */
export async function hammer(bases: string[], email: string, password: string): Promise<{ valid: number; statuses: Record<string, number>; ahead: number }> {
  const post = (base: string, client: string, body: unknown) =>
    fetch(`${base}/v1/auth/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
      body: JSON.stringify(body),
    });
  const statuses: Record<string, number> = {};
  const wrongOf = new Map<number, number>();
  let wrong = 0;
  const worker = async (c: number, w: number) => {
    for (let i = 0; (wrongOf.get(c) ?? 0) < 10; i++) {
      const r = await post(bases[(c + w) % bases.length]!, `198.51.100.${c + 1}`, { email: `nobody${c}@bank.example`, password: `wrong-password-${w}-${i}` });
      await r.arrayBuffer();
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 401) {
        wrong++;
        wrongOf.set(c, (wrongOf.get(c) ?? 0) + 1);
      } else if (r.status === 503) await new Promise((res) => setTimeout(res, 20));
      else return; // 429: the address used its 30 tries (the refused ones count)
    }
  };
  const attack = Array.from({ length: 12 }, (_, c) => [worker(c, 0), worker(c, 1)]).flat();
  // And three more at once per address: beyond what the queue holds, refused at once.
  const burst = Array.from({ length: 36 }, (_, i) =>
    post(bases[i % bases.length]!, `198.51.100.${(i % 12) + 1}`, { email: `nobody${i % 12}@bank.example`, password: 'wrong-burst' }).then(async (r) => {
      await r.arrayBuffer();
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }),
  );
  attack.push(...burst);
  while (wrongOf.size < 12) await new Promise((r) => setTimeout(r, 5));
  const sentAt = wrong;
  const valid = await post(bases[0]!, '203.0.113.7', { email, password });
  const ahead = wrong - sentAt;
  await Promise.all(attack);
  return { valid: valid.status, statuses, ahead };
}
