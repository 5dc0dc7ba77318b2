/**
 * A call on a connector that gave no usable answer, as data: which job it was (`kind`), why
 * (`reason`) and the sentence a person is shown (`problem`, already scrubbed of the connector's
 * secrets). Callers decide on `kind` and `reason`, never on the words of `problem`.
 */
export interface ConnectorFailure {
  /** The job that failed. */
  kind: CallJob;
  /**
   * - `unusable`: the connector cannot be called (a configuration fault, a kind without the capability);
   * - `threw`: the plugin threw or rejected;
   * - `cut_off`: the host stopped waiting (the call's timeout);
   * - `bad_answer`: the plugin answered something that is not the contract's shape;
   * - `said_no`: the plugin answered `{ok: false, problem}`;
   * - `too_large`: the answer was over the host's limit;
   * - `refused`: what the plugin answered was refused by the host (polled alerts the intake turned down);
   * - `not_declared`: an action the connector's kind does not declare, or cannot rehearse or undo
   *   (no such method, or its manifest says it is not rehearsable or reversible);
   * - `invalid_params`: an action's params do not fit the declaration's `params` schema (the
   *   caller's mistake, as a 400 is; the plugin was not called).
   */
  reason: 'unusable' | 'threw' | 'cut_off' | 'bad_answer' | 'said_no' | 'too_large' | 'refused' | 'not_declared' | 'invalid_params';
  problem: string;
}

/** The jobs the host runs on a connector's plugin. */
export type CallJob = 'test' | 'query' | 'discovery' | 'poll' | 'notification' | 'read' | 'rehearsal' | 'action' | 'undo';

export function failure(kind: CallJob, reason: ConnectorFailure['reason'], problem: string): ConnectorFailure {
  return { kind, reason, problem };
}
