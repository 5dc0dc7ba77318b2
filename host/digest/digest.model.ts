/** The last daily digest e-mail: which day, whether it went to everyone, who it failed for. */
export interface DigestMailState {
  day: string;
  at: string;
  ok: boolean;
  recipients: number;
  failed: Array<{ to: string; reason: string }>;
}
