import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';
import type { DigestMailState } from './digest.model.ts';

/** The settings document the digest area owns (`digest_state`): the last daily send, which the doctor shows. */
const NAME = 'digest_state';

export class DigestStateRepo {
  readonly #settings: SettingsStore;

  constructor(settings: SettingsStore) {
    this.#settings = settings;
  }

  get(trx?: Trx): Promise<DigestMailState | null> {
    return this.#settings.get<DigestMailState>(NAME, trx);
  }

  put(trx: Trx, state: DigestMailState): Promise<void> {
    return this.#settings.put(trx, NAME, state, state.at);
  }
}
