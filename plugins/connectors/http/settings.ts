/** The http connector's settings (validated against plugin.json's schema by the host; no defaults filled in). */
export interface Settings {
  base_url: string;
  health_path?: string;
  headers?: Record<string, string>;
  bearer_token?: string;
  timeout_s?: number;
  /** The runbook endpoint's path under base_url; default `/`. */
  runbook_path?: string;
  /** How the runbook endpoint is called; default POST. */
  runbook_method?: 'POST' | 'PUT';
  /** Sent to the runbook endpoint as `Authorization: Bearer`; default bearer_token. */
  runbook_token?: string;
  /** Whether the endpoint takes `dry_run: true` (then runbooks can be rehearsed). */
  runbook_dry_run?: boolean;
}

/** Seconds one request may take when `timeout_s` is not set. */
export const DEFAULT_TIMEOUT_S = 10;
