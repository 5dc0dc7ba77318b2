/**
 * The policy document and the JSON Schema (draft-07) that validates it. The schema is published
 * at GET /v1/policy/schema and is the one PUT /v1/policy and policy.json are checked against;
 * two rules a schema cannot say (a window's start before its end, a kind not both safe and
 * always-approved) are checked in `checkPolicy` after it.
 */

export type DefaultAutonomy = 'off' | 'shadow';
export type CeilingLevel = 'off' | 'shadow' | 'L1' | 'L2';

/** A change freeze: no action runs from `start` (inclusive) to `end` (exclusive), ISO 8601 UTC. */
export interface FreezeWindow {
  name: string;
  start: string;
  end: string;
}

export interface PolicyDocument {
  default_autonomy: DefaultAutonomy;
  ceilings: Record<string, CeilingLevel>;
  safe_for_l2: string[];
  always_approve: string[];
  freeze_windows: FreezeWindow[];
  max_actions_per_service_per_hour: number;
}

export const DEFAULT_AUTONOMY_VALUES: readonly DefaultAutonomy[] = ['off', 'shadow'];
export const CEILING_LEVELS: readonly CeilingLevel[] = ['off', 'shadow', 'L1', 'L2'];

export const MAX_CEILINGS = 500;
export const MAX_KINDS = 100;
export const MAX_WINDOWS = 50;
export const MAX_ACTIONS_PER_HOUR = 1000;

/** Service names as other areas write them: no spaces or control characters, 1 to 128 characters. */
export const SERVICE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$';
/** Action kinds: lower case snake or dotted names such as `restart_pod` or `k8s.rollout_restart`. */
export const KIND_PATTERN = '^[a-z][a-z0-9_.-]{0,63}$';
/** ISO 8601 in UTC: `2026-12-24T18:00:00Z`, seconds and fractions optional. */
export const UTC_TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?Z$';

/** The policy before any change: records only, nothing safe, nothing frozen, 6 actions an hour. */
export const DEFAULT_POLICY: PolicyDocument = Object.freeze({
  default_autonomy: 'shadow',
  ceilings: {},
  safe_for_l2: [],
  always_approve: [],
  freeze_windows: [],
  max_actions_per_service_per_hour: 6,
}) as PolicyDocument;

export function defaultPolicy(): PolicyDocument {
  return structuredClone({ ...DEFAULT_POLICY });
}

const kinds = (description: string) => ({
  description,
  type: 'array',
  maxItems: MAX_KINDS,
  uniqueItems: true,
  items: { type: 'string', pattern: KIND_PATTERN },
});

/**
 * The published schema. `version` is optional and only meaningful in a PUT body: the version
 * the caller read, refused with 409 `policy_version_conflict` when the policy has moved on.
 */
export const POLICY_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Policy',
  type: 'object',
  additionalProperties: false,
  required: ['default_autonomy', 'ceilings', 'safe_for_l2', 'always_approve', 'freeze_windows', 'max_actions_per_service_per_hour'],
  properties: {
    version: { description: 'optional on PUT: the version this change was based on', type: 'integer', minimum: 0 },
    default_autonomy: { description: 'level of a service with no other setting', type: 'string', enum: [...DEFAULT_AUTONOMY_VALUES] },
    ceilings: {
      description: 'per service, the highest level it may ever run at',
      type: 'object',
      maxProperties: MAX_CEILINGS,
      propertyNames: { type: 'string', pattern: SERVICE_PATTERN },
      additionalProperties: { type: 'string', enum: [...CEILING_LEVELS] },
    },
    safe_for_l2: kinds('action kinds that may run at L2 without asking'),
    always_approve: kinds('action kinds that always need approval, whatever the level'),
    freeze_windows: {
      description: 'change freezes: no action runs from start (inclusive) to end (exclusive)',
      type: 'array',
      maxItems: MAX_WINDOWS,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'start', 'end'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 100 },
          start: { type: 'string', pattern: UTC_TIMESTAMP_PATTERN },
          end: { type: 'string', pattern: UTC_TIMESTAMP_PATTERN },
        },
      },
    },
    max_actions_per_service_per_hour: {
      description: 'actions per service per rolling hour; 0 stops all',
      type: 'integer',
      minimum: 0,
      maximum: MAX_ACTIONS_PER_HOUR,
    },
  },
} as const;
