import { Command } from '@oclif/core';
export default class Version extends Command {
  static override description = 'Print the version';
  static override enableJsonFlag = true;
  async run(): Promise<{ version: string }> {
    this.log('0.1.0');
    return { version: '0.1.0' };
  }
}
