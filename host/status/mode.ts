/** The install's mode: setup (no owner yet), configuring (no valid licence), operating. */
export type Mode = 'setup' | 'configuring' | 'operating';
