/** The alertmanager connector's settings (validated against plugin.json's schema by the host). */
export interface Settings {
  url: string;
  username?: string;
  password?: string;
  timeout_s?: number;
  poll_s?: number;
  filter?: string[];
}

/** Seconds one request may take when `timeout_s` is not set. */
export const DEFAULT_TIMEOUT_S = 10;
