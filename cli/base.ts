import { Command } from '@oclif/core';
import { ConfigError, loadConfig, type Config } from '../host/config.ts';

// Kept light on purpose: oclif imports every command file to list the commands, so a command
// file imports only this and @oclif/core, and loads the host's heavier modules in run().

/** Exit codes of every command: 0 fine, 1 a failed check (or unreachable), 2 usage or configuration. */
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A failure the operator can act on: printed as its message (or `{ok, error, message}` with --json), no stack. */
export class CliProblem extends Error {
  readonly code: string;
  readonly exit: number;

  constructor(code: string, message: string, exit: number) {
    super(message);
    this.code = code;
    this.exit = exit;
  }
}

/** The base of our commands: problems become a clear line and an exit code instead of a stack. */
export abstract class ServiceCommand extends Command {
  protected override async catch(err: Error & { exitCode?: number }): Promise<unknown> {
    const problem = err instanceof CliProblem ? err : err instanceof ConfigError ? configProblem(err) : null;
    if (problem === null) return super.catch(err);
    process.exitCode = problem.exit;
    if (this.jsonEnabled()) this.logJson({ ok: false, error: problem.code, message: problem.message });
    else process.stderr.write(`${problem.message}\n`);
    return undefined;
  }

  /** Returns `result` for --json, exiting 1 when it records a failure. */
  protected outcome<T>(result: T, ok: boolean): T {
    if (!ok) process.exitCode = EXIT_FAILED;
    return result;
  }
}

function configProblem(e: ConfigError): CliProblem {
  return new CliProblem('bad_config', `invalid configuration:\n  ${e.problems.join('\n  ')}`, EXIT_USAGE);
}

/** The same SERVICE_* variables the service reads, read once. */
export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) throw configProblem(e);
    throw e;
  }
}
