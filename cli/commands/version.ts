import { Command } from '@oclif/core';
import { PLUGIN_API_VERSION, VERSION } from '../../host/version.ts';

export default class Version extends Command {
  static override summary = 'Print the version of the service and of the plugin API it offers';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];
  static override enableJsonFlag = true;

  async run(): Promise<{ version: string; plugin_api: string }> {
    await this.parse(Version);
    this.log(`${VERSION} (plugin API ${PLUGIN_API_VERSION})`);
    return { version: VERSION, plugin_api: PLUGIN_API_VERSION };
  }
}
