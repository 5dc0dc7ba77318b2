/**
 * The plugin contract: the only host module that code in `plugins/` and `packs/` may import
 * (and then only with `import type`). Everything a plugin can rely on is declared here, so the
 * host's internals can change without breaking a vendor's plugin.
 *
 * A plugin is a folder with a `plugin.json` (see {@link PluginManifest} and
 * `host/plugins/manifest.schema.json`) whose `entry` module default-exports the plugin object:
 * a {@link NormaliserPlugin}, {@link ConnectorPlugin} or {@link PackPlugin} according to `kind`.
 *
 * The one path a plugin names: its declarations live by plugin kind in host/plugins/contract/
 * (common.ts, normaliser.ts, connector.ts, pack.ts), re-exported here whole, versioned together by
 * PLUGIN_API_VERSION. A vendor copies this file with that folder to type-check against (and drops
 * the test kit's line below if it does not copy host/plugins/testkit.ts).
 *
 * @packageDocumentation
 */

export type * from './contract/common.ts';
export type * from './contract/normaliser.ts';
export type * from './contract/connector.ts';
export type * from './contract/pack.ts';

// The plugin test kit (host/plugins/testkit.ts): for a plugin folder's own tests, never for the
// plugin's code, which imports this module with `import type` only.
export * from './testkit.ts';
