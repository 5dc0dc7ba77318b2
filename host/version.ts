import { readFileSync } from 'node:fs';

/** The running version, read once from package.json. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** The plugin API this host offers; a plugin's `api` range must accept it. */
export const PLUGIN_API_VERSION = '1.7.0';
