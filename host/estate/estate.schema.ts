import { AppError } from '../errors.ts';
import { ajv, describe } from '../json-schema.ts';
import { parseMatchers } from '../matchers.ts';

/** The kinds of link a service has. */
export const LINK_KINDS = ['repository', 'alert', 'workload', 'database', 'runbook'] as const;
export type LinkKind = (typeof LINK_KINDS)[number];
/** Where a link came from: the first three and `override`/`confirmed` are certain, the rest matches. */
export const CERTAIN_ORIGINS = ['label', 'setting', 'deployed', 'override', 'confirmed'] as const;
export const MATCH_ORIGINS = ['name', 'codeowners'] as const;
export type Origin = (typeof CERTAIN_ORIGINS)[number] | (typeof MATCH_ORIGINS)[number];
export const isCertain = (o: Origin): boolean => (CERTAIN_ORIGINS as readonly string[]).includes(o);

/** A link as the overrides document gives it (its origin is `override`). */
export interface LinkInput {
  kind: LinkKind;
  match?: string;
  connector?: string;
  path?: string;
  name?: string;
}
/** A link as the estate answers it. */
export interface Link extends LinkInput {
  origin: Origin;
  certain: boolean;
}

/** One service's entry in the overrides document: each field given replaces discovery's. */
export interface OverrideEntry {
  owner?: string;
  team?: string;
  tier?: number;
  approvers?: string[];
  technologies?: string[];
  links?: LinkInput[];
  depends_on?: string[];
  health_url?: string;
  /** Per cause id (`prometheus/error-rate`): settings of that cause for this service (thresholds), over the pack's defaults. */
  check_settings?: Record<string, Record<string, number | string | boolean>>;
}
export interface OverridesDoc {
  services: Record<string, OverrideEntry | null>;
}

export const SERVICE_NAME = '^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$';
const NAME = { type: 'string', pattern: SERVICE_NAME, description: 'A service name: a letter or digit, then letters, digits, `.`, `_`, `-` (at most 200).' };
const SHORT = (description: string, max = 200) => ({ type: 'string', minLength: 1, maxLength: max, description });

/** The published schema of `PUT /v1/estate/overrides` (`GET /v1/estate/overrides/schema`). */
export const OVERRIDES_SCHEMA = {
  $id: 'https://oncall.invalid/schemas/estate-overrides.json',
  title: 'Estate overrides',
  description: 'Services people added and the fields and links they set. Overrides always win over discovery, after every build too.',
  type: 'object',
  additionalProperties: false,
  required: ['services'],
  properties: {
    services: {
      type: 'object',
      description: 'By service name: the entry (adds the service, or changes it), or null (removes the override, and the service with it).',
      propertyNames: { pattern: SERVICE_NAME },
      maxProperties: 10_000,
      additionalProperties: {
        description: 'One service, or null to remove it.',
        anyOf: [
          { type: 'null' },
          {
            type: 'object',
            additionalProperties: false,
            properties: {
              owner: { type: 'string', format: 'email', maxLength: 254, description: "The owner's e-mail." },
              team: SHORT('The team that runs it.'),
              tier: { type: 'integer', minimum: 1, maximum: 4, description: 'Criticality, 1 (most critical) to 4.' },
              approvers: {
                type: 'array',
                maxItems: 50,
                uniqueItems: true,
                items: { type: 'string', format: 'email', maxLength: 254 },
                description: 'People of this install (e-mails) who may approve its actions.',
              },
              technologies: {
                type: 'array',
                maxItems: 50,
                uniqueItems: true,
                items: SHORT('A technology, e.g. postgres.', 64),
                description: 'What it is built on.',
              },
              links: {
                type: 'array',
                maxItems: 500,
                description: 'Links added with origin `override` (certain).',
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['kind'],
                  properties: {
                    kind: { enum: [...LINK_KINDS], description: 'What the link points at.' },
                    match: SHORT('A Prometheus-style label matcher list (alert and workload links).', 1000),
                    connector: SHORT('The connector that reads or acts on it.'),
                    path: SHORT('A folder in a repository, or a path on a runbook endpoint.', 1000),
                    name: SHORT("A database's or a runbook's name; an alert's name for an alert link."),
                  },
                },
              },
              depends_on: { type: 'array', maxItems: 200, uniqueItems: true, items: NAME, description: 'Services it depends on.' },
              health_url: { type: 'string', format: 'uri', maxLength: 2000, description: 'Where its health can be read.' },
              check_settings: {
                type: 'object',
                maxProperties: 100,
                description: "Per cause id (`prometheus/error-rate`): that cause's settings for this service (thresholds), over the pack's defaults.",
                propertyNames: { pattern: '^[a-z][a-z0-9-]{1,63}/[a-z][a-z0-9-]{0,63}$' },
                additionalProperties: {
                  type: 'object',
                  maxProperties: 50,
                  propertyNames: { pattern: '^[a-z][a-z0-9_]{0,63}$' },
                  additionalProperties: { anyOf: [{ type: 'number' }, { type: 'string', maxLength: 200 }, { type: 'boolean' }] },
                },
              },
            },
          },
        ],
      },
    },
  },
} as const;

const check = ajv.compile<OverridesDoc>(OVERRIDES_SCHEMA);

/**
 * The document, or 400 `invalid_body` naming the field: the schema first, then what a schema
 * cannot say (matchers readable, a link of each kind naming what it needs, no service depending
 * on itself). Approvers are checked by the service against the people of the install.
 */
export function validateOverrides(body: unknown): OverridesDoc {
  if (!check(body)) {
    const errors = check.errors ?? [];
    // anyOf reports the null branch first; the object branch names the real field.
    const real = errors.filter((e) => e.keyword !== 'anyOf' && !(e.keyword === 'type' && e.params && (e.params as { type?: string }).type === 'null'));
    throw new AppError('invalid_body', describe(real.length > 0 ? real : errors));
  }
  for (const [name, entry] of Object.entries(body.services)) {
    if (entry === null) continue;
    (entry.links ?? []).forEach((l, i) => {
      const where = `services.${name}.links.${i}`;
      if (l.match !== undefined) {
        const p = parseMatchers(l.match);
        if (!p.ok) throw new AppError('invalid_body', `${where}.match: ${p.problem}`);
      }
      if ((l.kind === 'alert' || l.kind === 'workload') && l.match === undefined && l.name === undefined)
        throw new AppError('invalid_body', `${where}: an ${l.kind} link needs match or name`);
      if ((l.kind === 'database' || l.kind === 'runbook') && l.name === undefined)
        throw new AppError('invalid_body', `${where}.name is required for a ${l.kind} link`);
      if (l.kind === 'repository' && l.connector === undefined && l.path === undefined && l.name === undefined)
        throw new AppError('invalid_body', `${where}: a repository link needs connector, path or name`);
    });
    if ((entry.depends_on ?? []).includes(name)) throw new AppError('invalid_body', `services.${name}.depends_on: a service cannot depend on itself`);
  }
  return body;
}
