/** What is wrong with a plugin, in words a vendor can act on (thrown by the loader's checks, host/plugins/checks.ts and pack-shape.ts). */
export class PluginProblem extends Error {}
