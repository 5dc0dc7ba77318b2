import { AppError } from '../errors.ts';
import { schemaValidator } from '../json-schema.ts';
import type { Encrypted, Sealed } from './crypto.ts';
import { PARTS, type Part } from './parts.ts';
import type { InstallRef } from './state.repo.ts';

/**
 * What installs of a keychain say to each other (docs/keychain.md, "Between installs"). Every
 * message is a payload and an Ed25519 signature over it: the home's answers signed by the
 * keychain's key, an install's requests by its own identity key. Each shape is checked before
 * anything in it is used, whichever side it comes from.
 */
export interface Signed<P = Record<string, unknown>> {
  payload: P;
  signature: string;
}

/** An install as listed to the members: its reference, the parts it keeps its own, when it was paired. */
export interface MemberRef extends InstallRef {
  own: Part[];
  paired_at: string;
}

/** A bundle as it travels: the encrypted part and the keychain key's signature over all of it. */
export interface BundleWire extends Encrypted {
  part: Part;
  epoch: number;
  version: number;
  created_at: string;
  signature: string;
}

export interface HelloPayload {
  purpose: 'hello';
  keychain: string;
  epoch: number;
  home: InstallRef;
  sign_key: string;
  at: string;
}

export interface PairPayload {
  purpose: 'pair';
  keychain: string;
  install: InstallRef;
  /** The site key's secret, sealed to the home's box key for this joiner only. */
  secret: Sealed;
  at: string;
  nonce: string;
}

export interface PairedPayload {
  purpose: 'paired';
  keychain: string;
  epoch: number;
  nonce: string;
  member: string;
  content_key: Sealed;
  home: InstallRef;
  scope: Part[];
  members: MemberRef[];
  notice: Signed | null;
}

export interface PollPayload {
  purpose: 'poll';
  keychain: string;
  epoch: number;
  install: string;
  at: string;
  nonce: string;
  version: string;
  address: string | null;
  /** Per part, the bundle it applied last: [epoch, version]. */
  applied: Partial<Record<Part, [number, number]>>;
}

export interface PolledPayload {
  purpose: 'polled';
  keychain: string;
  epoch: number;
  nonce: string;
  at: string;
  home: InstallRef;
  scope: Part[];
  own: Part[];
  members: MemberRef[];
  bundles: BundleWire[];
  notice: Signed | null;
}

export interface NotMemberPayload {
  purpose: 'not_member';
  keychain: string;
  install: string;
  nonce: string;
}

export interface TakeOverPayload {
  purpose: 'take_over';
  keychain: string;
  epoch: number;
  home: InstallRef;
  sign_key: string;
  at: string;
  previous: { epoch: number; home: string };
}

export interface AckPayload {
  purpose: 'take_over_ack';
  keychain: string;
  epoch: number;
  install: string;
}

/** The signed part of a bundle: everything it carries. */
export function bundlePayload(keychain: string, b: Omit<BundleWire, 'signature'>): Record<string, unknown> {
  return { purpose: 'bundle', keychain, part: b.part, epoch: b.epoch, version: b.version, created_at: b.created_at, iv: b.iv, tag: b.tag, ct: b.ct };
}

/** What a bundle's encryption is bound to: a bundle cannot be passed off as another part or version. */
export const bundleAad = (keychain: string, part: string, epoch: number, version: number): string => `bundle:${keychain}:${part}:${epoch}:${version}`;

// ---- shapes -------------------------------------------------------------------------------

const str = (max: number) => ({ type: 'string', maxLength: max });
const KEY = { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' };
const B64U = (max: number) => ({ type: 'string', pattern: '^[A-Za-z0-9_-]*$', maxLength: max });
const FP = { type: 'string', pattern: '^[0-9a-f]{4}(-[0-9a-f]{4}){7}$' };
const TIME = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$' };
const COUNT = { type: 'integer', minimum: 0, maximum: 2_000_000_000 };
const PART = { enum: [...PARTS] };
const PART_LIST = { type: 'array', items: PART, uniqueItems: true, maxItems: PARTS.length };
const NAME = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$' };
const ID = { type: 'string', pattern: '^[A-Za-z0-9_-]{8,64}$' };
const SIGNATURE = str(200);

const INSTALL_REF = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'fingerprint', 'install_key', 'box_key', 'address', 'version'],
  properties: {
    name: NAME,
    fingerprint: FP,
    install_key: KEY,
    box_key: KEY,
    address: { anyOf: [str(500), { type: 'null' }] },
    version: { anyOf: [str(50), { type: 'null' }] },
  },
};
const MEMBER_REF = {
  ...INSTALL_REF,
  required: [...INSTALL_REF.required, 'own', 'paired_at'],
  properties: { ...INSTALL_REF.properties, own: PART_LIST, paired_at: TIME },
};
const ENCRYPTED_PROPS = { iv: B64U(32), tag: B64U(32), ct: B64U(64 * 1024 * 1024) };
const SEALED = {
  type: 'object',
  additionalProperties: false,
  required: ['epk', 'iv', 'tag', 'ct'],
  properties: { epk: KEY, ...ENCRYPTED_PROPS, ct: B64U(4096) },
};
const BUNDLE = {
  type: 'object',
  additionalProperties: false,
  required: ['part', 'epoch', 'version', 'created_at', 'iv', 'tag', 'ct', 'signature'],
  properties: { part: PART, epoch: COUNT, version: COUNT, created_at: TIME, ...ENCRYPTED_PROPS, signature: SIGNATURE },
};
const SIGNED_ANY = {
  type: 'object',
  additionalProperties: false,
  required: ['payload', 'signature'],
  properties: { payload: { type: 'object' }, signature: SIGNATURE },
};

function signed(purpose: string, required: string[], properties: Record<string, unknown>) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['payload', 'signature'],
    properties: {
      payload: {
        type: 'object',
        additionalProperties: false,
        required: ['purpose', 'keychain', ...required],
        properties: { purpose: { const: purpose }, keychain: ID, ...properties },
      },
      signature: SIGNATURE,
    },
  };
}

const NOTICE = signed('take_over', ['epoch', 'home', 'sign_key', 'at', 'previous'], {
  epoch: COUNT,
  home: INSTALL_REF,
  sign_key: KEY,
  at: TIME,
  previous: { type: 'object', additionalProperties: false, required: ['epoch', 'home'], properties: { epoch: COUNT, home: FP } },
});
const NOTICE_OR_NULL = { anyOf: [NOTICE, { type: 'null' }] };

const checks = {
  hello: schemaValidator<Signed<HelloPayload>>(
    signed('hello', ['epoch', 'home', 'sign_key', 'at'], { epoch: COUNT, home: INSTALL_REF, sign_key: KEY, at: TIME }),
  ),
  pair: schemaValidator<Signed<PairPayload>>(
    signed('pair', ['install', 'secret', 'at', 'nonce'], { install: INSTALL_REF, secret: SEALED, at: TIME, nonce: ID }),
  ),
  paired: schemaValidator<Signed<PairedPayload>>(
    signed('paired', ['epoch', 'nonce', 'member', 'content_key', 'home', 'scope', 'members', 'notice'], {
      epoch: COUNT,
      nonce: ID,
      member: FP,
      content_key: SEALED,
      home: INSTALL_REF,
      scope: PART_LIST,
      members: { type: 'array', maxItems: 1000, items: MEMBER_REF },
      notice: NOTICE_OR_NULL,
    }),
  ),
  poll: schemaValidator<Signed<PollPayload>>(
    signed('poll', ['epoch', 'install', 'at', 'nonce', 'version', 'address', 'applied'], {
      epoch: COUNT,
      install: FP,
      at: TIME,
      nonce: ID,
      version: str(50),
      address: { anyOf: [str(500), { type: 'null' }] },
      applied: {
        type: 'object',
        additionalProperties: false,
        properties: Object.fromEntries(PARTS.map((p) => [p, { type: 'array', minItems: 2, maxItems: 2, items: COUNT }])),
      },
    }),
  ),
  polled: schemaValidator<Signed<PolledPayload>>(
    signed('polled', ['epoch', 'nonce', 'at', 'home', 'scope', 'own', 'members', 'bundles', 'notice'], {
      epoch: COUNT,
      nonce: ID,
      at: TIME,
      home: INSTALL_REF,
      scope: PART_LIST,
      own: PART_LIST,
      members: { type: 'array', maxItems: 1000, items: MEMBER_REF },
      bundles: { type: 'array', maxItems: PARTS.length, items: BUNDLE },
      notice: NOTICE_OR_NULL,
    }),
  ),
  notMember: schemaValidator<Signed<NotMemberPayload>>(signed('not_member', ['install', 'nonce'], { install: FP, nonce: ID })),
  takeOver: schemaValidator<Signed<TakeOverPayload>>(NOTICE),
  ack: schemaValidator<Signed<AckPayload>>(signed('take_over_ack', ['epoch', 'install'], { epoch: COUNT, install: FP })),
  any: schemaValidator<Signed>(SIGNED_ANY),
};

export type MessageKind = keyof typeof checks;

/**
 * The message, checked against its shape; throws `code` (400 `invalid_body` for requests, the
 * caller's code for answers from another install) naming what is wrong.
 */
export function readMessage<K extends MessageKind>(
  kind: K,
  value: unknown,
  code: 'invalid_body' | 'keychain_bad_answer' = 'invalid_body',
): ReturnType<(typeof checks)[K]> {
  try {
    return checks[kind](value) as ReturnType<(typeof checks)[K]>;
  } catch (e) {
    if (e instanceof AppError && code !== 'invalid_body') throw new AppError(code, `the ${kind} message is not valid: ${e.message}`);
    throw e;
  }
}
