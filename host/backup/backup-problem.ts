/** A backup or restore that cannot go on, with a code and a message the operator can act on. */
export class BackupProblem extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}
