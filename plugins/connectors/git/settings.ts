/** The git connector's settings (validated against plugin.json's schema by the host). */
export interface Settings {
  path?: string;
  url?: string;
  branch?: string;
  username?: string;
  token?: string;
  timeout_s?: number;
}

export const DEFAULT_TIMEOUT_S = 15;
