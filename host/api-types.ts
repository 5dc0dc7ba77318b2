/**
 * The HTTP API's answers as the console reads them (docs/api.md): one type-only module, so the
 * console (`web/src/lib/api.ts`) takes its answer types from the server instead of copying them.
 * A change on the server that breaks a page fails `npm run typecheck:web` (svelte-check).
 *
 * Type-only on purpose: `export type` and `import type` alone, no value, so bundlers erase every
 * import of it and the console never loads host code. Each answer is the type the area's service
 * returns (its own name, or `Awaited<ReturnType<...>>` of the method the route answers with).
 * Where the host keeps a part of an answer loosely typed (the action path stores its steps as
 * JSON: `rehearsal`, `approvals`, `actions`, `verification`), the shape on the wire is declared
 * here, next to the host type it refines; the console's browser tests (test/console-e2e-*.test.ts)
 * read those parts from a real service.
 */

import type { ChangeOutcome, AutonomyOverview, PendingRaise, ServiceAutonomy } from './governance/autonomy.service.ts';
import type { ApprovalView } from './governance/approvals.service.ts';
import type { HaltOutcome } from './governance/halt.service.ts';
import type { Level } from './governance/levels.ts';
import type { Proposal as HostProposal } from './acting/proposal.ts';
import type { PolicyDecision as ActingDecision } from './acting/policy-decision.ts';
import type { PathState as HostPathState } from './acting/paths.model.ts';
import type { CatalogueEntry } from './connectors/kinds.ts';
import type { ConnectorService, ConnectorView, TestReport as ConnectorTestReport } from './connectors/connectors.service.ts';
import type { DigestData } from './digest/digest.ts';
import type { DoctorComponent as HostDoctorComponent, DoctorReport as HostDoctorReport } from './doctor/doctor.service.ts';
import type { EpisodeDetail as HostEpisodeDetail, EpisodeReader, EpisodeSummary as HostEpisodeSummary } from './episodes/episode.reader.ts';
import type { EstateService as HostEstateService, EstateView, OverridesView, UnplacedAlert as HostUnplacedAlert } from './estate/estate.service.ts';
import type { CandidateView, ServiceView } from './estate/estate.model.ts';
import type { GuardedFields as HostGuardedFields } from './estate/estate-guard.ts';
import type { Link, LinkInput, LinkKind as HostLinkKind, OverrideEntry as HostOverrideEntry } from './estate/estate.schema.ts';
import type { AccessPolicy as HostAccessPolicy } from './identity/access-policy.ts';
import type { Person as HostPerson } from './identity/people.model.ts';
import type { PasswordEnd as HostPasswordEnd, PersonPatch as HostPersonPatch } from './identity/people.service.ts';
import type { Role as HostRole } from './identity/principal.ts';
import type { KeychainView, HomeView, MemberState as HostMemberState, MemberView, PartView } from './keychain/view.service.ts';
import type { PollResult as HostPollResult } from './keychain/member.service.ts';
import type { Part } from './keychain/parts.ts';
import type { LedgerEvent as HostLedgerEvent } from './ledger/entry.ts';
import type { VerifyReport as HostVerifyReport } from './ledger/verify.ts';
import type { EmailCodes as HostEmailCodes, MailView as HostMailView } from './mail/mail.service.ts';
import type { MailSettings as StoredMailSettings } from './mail/mail-settings.repo.ts';
import type { ChannelState as HostChannelState } from './notify/outbox.repo.ts';
import type { NotifyStatus as HostNotifyStatus } from './notify/delivery.service.ts';
import type { NotifySettingsView } from './notify/notify-settings.service.ts';
import type { FreezeWindow as HostFreezeWindow, PolicyDocument as HostPolicyDocument } from './policy/policy.schema.ts';
import type { PolicyInForce } from './policy/policy.service.ts';
import type { GroupMapping as HostGroupMapping } from './sso/sso-settings.ts';
import type { SsoView as HostSsoView } from './sso/sso-settings.service.ts';
import type { SyncResult as HostSyncResult } from './sso/directory-sync.service.ts';
import type { Attempt, CertificateInfo } from './sso/ldap-connection.ts';
import type { Discovery as HostDiscovery } from './sso/ldap-discovery.ts';
import type { DirectoryGroup as HostDirectoryGroup } from './sso/directory.ts';
import type { TestReport as HostSsoTestReport } from './sso/sso-admin.service.ts';
import type { Mode as HostMode } from './status/mode.ts';
import type { SetupStep as HostSetupStep, Status as HostStatus } from './status/status.service.ts';
import type { StudyReport as HostStudyReport } from './study/study-report.ts';
import type { StudyView } from './study/study.service.ts';

// ---- status and sign-in (docs/api.md, docs/sign-in.md)

export type Mode = HostMode;
export type SetupStep = HostSetupStep;
/** GET /v1/status. */
export type Status = HostStatus;
export type EmailCodes = HostEmailCodes;
export type Role = HostRole;
/** A signed-in person as sign-in answers them. */
export interface User {
  email: string;
  name: string;
  role: Role;
}
/** GET /v1/auth/me (host/identity/auth.routes.ts builds it in the route). */
export interface Me {
  user: User | null;
  actor: string;
  role: Role;
  via: 'session' | 'break_glass' | 'admin_token';
}
/** POST /v1/login. */
export type LoginAnswer = { bootstrap: true } | { break_glass: true; token: string };
/** POST /v1/auth/verify, /password, /ldap. */
export interface SessionAnswer {
  token: string;
  user?: User;
}

// ---- episodes, investigation and acting (docs/episodes.md, docs/investigation.md, docs/acting.md)

export type EpisodeSummary = HostEpisodeSummary;
/** GET /v1/episodes. */
export type EpisodePage = Awaited<ReturnType<EpisodeReader['list']>>;
export type Signal = HostEpisodeDetail['signals'][number];
export type Baseline = Signal['baseline'];
export type Investigation = NonNullable<HostEpisodeDetail['investigation']>;
export type Verdict = HostEpisodeDetail['verdicts'][number];
export type Evidence = HostEpisodeDetail['evidence'][number];
export type Diagnosis = NonNullable<HostEpisodeDetail['diagnosis']>;
export type Proposal = HostProposal;
export type PolicyCheck = ActingDecision['checks'][number];
/** Acting's decision (`level`, `approval`, `checks`), or, on an episode without an action path, the episode's own (`outcome`). */
export type PolicyDecision = Partial<Pick<ActingDecision, 'level' | 'approval' | 'checks'>> & { decision: string; reason: string | null; outcome?: string };
/**
 * The dry run of the proposed action (host/acting/acting.service.ts): what it showed, a failure,
 * or `ok: null` when the connector cannot rehearse with its settings (its reason in `shown`),
 * which is no failure: the path goes on.
 */
export type Rehearsal = { ok: true; shown: string; at: string } | { ok: null; shown: string; at: string } | { ok: false; problem: string };
export type ApprovalState = ApprovalView['state'];
/** The action request as the path last saw it. */
export interface ActionRequestSeen {
  id: string;
  state: ApprovalState;
  approvers: string[];
  needed: number;
  expires_at: string;
  decisions: ApprovalView['decisions'];
}
/** An action: only `connector`, `kind`, `params` while it is being taken; the result once recorded. */
export interface TakenAction {
  connector: string;
  kind: string;
  params: Record<string, unknown>;
  approval_id?: string | null;
  executed_at?: string;
  ok?: boolean;
  shown?: string;
  problem?: string | null;
  reversible: boolean;
  undone_at?: string | null;
  undone_by?: string;
}
export type PathState = HostPathState;
/** The check after the action: the cause re-checked (`by: check`) or every alert clearing (`by: alerts`). */
export interface Verification {
  at: string;
  cause: string;
  expected: string;
  by?: HostProposal['verify']['by'];
  verdict: string | null;
  reason: string | null;
  alerts_resolved: boolean;
  mitigated: boolean;
}
/** GET /v1/episodes/{id}: the host's answer with the action path's steps in their wire shapes. */
export type EpisodeDetail = Omit<HostEpisodeDetail, 'proposal' | 'policy_decision' | 'rehearsal' | 'approvals' | 'actions' | 'path_state' | 'verification'> & {
  proposal: Proposal | null;
  policy_decision: PolicyDecision | null;
  rehearsal: Rehearsal | null;
  approvals: ActionRequestSeen[];
  /** An action's position, from 1, is the `n` of its undo. */
  actions: TakenAction[];
  path_state: PathState | null;
  verification: Verification | null;
};

// ---- governance, the ledger and the digest (docs/governance.md, docs/ledger.md, docs/digest.md)

export type { Level, PendingRaise, ServiceAutonomy, AutonomyOverview };
/** What a person may set through the API (L2 only by an approved raise). */
export type SettableLevel = Exclude<Level, 'L2'>;
export type Halt = NonNullable<AutonomyOverview['halt']>;
/** POST /v1/autonomy. */
export type AutonomyChange = ChangeOutcome;
/** POST /v1/halt, /v1/resume. */
export type HaltAnswer = HaltOutcome;
export type Approval = ApprovalView;
export type LedgerEvent = HostLedgerEvent;
export type VerifyReport = HostVerifyReport;
/** GET /v1/digest. */
export type Digest = DigestData & { markdown: string };

// ---- settings (docs/connectors.md, docs/policy.md, docs/people.md, docs/mail.md, docs/sign-in.md)

export type ConnectorKind = CatalogueEntry;
export type Connector = ConnectorView;
/** GET /v1/connectors. */
export type ConnectorList = Awaited<ReturnType<ConnectorService['list']>>;
export type TestReport = ConnectorTestReport;
export type AutonomyLevel = Level;
export type FreezeWindow = HostFreezeWindow;
export type PolicyDocument = HostPolicyDocument;
/** GET /v1/policy. */
export type Policy = PolicyInForce;
export type Person = HostPerson;
export type PasswordEnd = HostPasswordEnd;
export type PersonPatch = HostPersonPatch;
export type AccessPolicy = HostAccessPolicy;
export type MailView = HostMailView;
/** PUT /v1/settings/mail: the fields to change; a secret left out is kept. */
export type MailSettings = Partial<Omit<StoredMailSettings, 'rev'>>;
export type GroupMapping = HostGroupMapping;
export type SsoView = HostSsoView;
export type LdapSettingsView = NonNullable<SsoView['ldap']>;
export type SyncResult = HostSyncResult;
export type Certificate = CertificateInfo;
export type DirectoryAttempt = Attempt;
export type Discovery = HostDiscovery;
export type DirectoryGroup = HostDirectoryGroup;
export type SsoTestReport = HostSsoTestReport;
export type NotifySettings = NotifySettingsView;
export type ChannelState = HostChannelState;
export type NotifyStatus = HostNotifyStatus;
export type DoctorComponent = HostDoctorComponent;
export type DoctorReport = HostDoctorReport;

// ---- the estate (docs/estate.md)

export type LinkKind = HostLinkKind;
export type EstateLinkInput = LinkInput;
export type EstateLink = Link;
export type EstateService = ServiceView;
export type EstateCandidate = CandidateView;
export type UnplacedAlert = HostUnplacedAlert;
export type Estate = EstateView;
export type OverrideEntry = HostOverrideEntry;
export type GuardedFields = HostGuardedFields;
/** GET and PUT /v1/estate/overrides; after a PUT, `asked` names the approval requests it opened. */
export type EstateOverrides = OverridesView & { asked?: string[] };
export type Suggestion = Awaited<ReturnType<HostEstateService['suggestions']>>[number];

// ---- the study and the keychain (docs/study.md, docs/keychain.md)

export type Study = StudyView;
export type StudyState = StudyView['state'];
export type StudyReport = HostStudyReport;
export type StudyEvidence = StudyReport['holding_now'][number]['evidence'][number];
export type KeychainPart = Part;
export type MemberState = HostMemberState;
export type KeychainMember = MemberView;
export type KeychainHome = HomeView;
export type KeychainPartView = PartView;
export type PollResult = HostPollResult;
/** GET /v1/keychain; after a sync, `sync` says what it applied or refused. */
export type Keychain = KeychainView & { sync?: PollResult | null };
