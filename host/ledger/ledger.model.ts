/** Filters of GET /v1/ledger; every one optional. */
export interface LedgerFilter {
  type?: string;
  actor?: string;
  trace?: string;
  q?: string;
  beforeSeq?: number;
  afterSeq?: number;
  limit: number;
  order: 'asc' | 'desc';
}

export interface Checkpoint {
  seq: number;
  hash: string;
  at: string;
  signature: string;
}
