import type { Verdict } from "./providers.tables.js";
import type { Signer, VendorClient } from "./vendor-http.js";

/**
 * A broker is the service's adapter to one verification vendor. It declares what it offers and
 * implements the vendor's side of each operation; the providers service does everything that is
 * the same for every vendor: configurations and their sealed credentials, runs, the record of
 * every vendor call, inbound events (verified, stored once, handled by a job), pauses, timeouts,
 * retries and errors. A new vendor is one folder under `brokers/` and one line in
 * `brokers/index.ts` (docs/providers.md walks through one).
 */
export interface Broker<Config = unknown, Credentials = unknown> {
  /** The id workflows name in a `provider` node and operators configure (`sumsub`). */
  readonly id: string;
  readonly label: string;
  /**
   * `synchronous`: the node gets its result from `start` and goes on at once. `asynchronous`:
   * `start` pauses the node, and a vendor event (or `poll`) resolves it later.
   */
  readonly kind: "synchronous" | "asynchronous";
  /** JSON Schema (2020-12) of the node's `config`, checked when a workflow version is created. */
  readonly configSchema: Record<string, unknown>;
  /** JSON Schema of the configuration's `credentials`, checked when an operator sets them. */
  readonly credentialsSchema: Record<string, unknown>;
  /** Whether the configuration carries a `webhookSecret` that verifies the vendor's events. */
  readonly webhookSecret: "required" | "none";
  /** Actions on a paused node of this broker (endpoint 5); none resolves the pause. */
  readonly pendingActions: readonly BrokerAction[];
  /** Actions on a case the broker ran on, valid after the decision too (endpoints 6 and 7). */
  readonly durableActions: readonly BrokerAction[];

  /**
   * A screening broker's hits in an output of its own (a node's or a rescreen's), for the
   * analysts' review (its `results`, then its `dismissedHits`). A broker that has it is given
   * the subject's `verdicts` and reports `dismissedHits` and `unreviewedHits` in its outputs.
   */
  hitsOf?(output: Record<string, unknown>): ScreeningHit[];
  /** A run's result in words for the case page (an identity check's answer, its labels, the applicant). */
  describeRun?(run: RunView<Config> & { status: string }): RunInWords;

  /** Fills in the config's defaults (it has passed `configSchema`). */
  parseConfig(raw: Record<string, unknown>): Config;
  /** How every request to the vendor is authenticated. */
  signer(credentials: Credentials): Signer;

  /**
   * Runs the node's vendor side. Called with no database transaction open; may be called again
   * for the same run after a crash, so it must not create twice what the vendor keeps (Sumsub:
   * find-or-create the applicant).
   */
  start(call: BrokerCall<Credentials>, input: StartInput<Config>): Promise<StartResult>;
  /** A pending action (endpoint 5) on a paused run; the answer's `output`. */
  pendingAction(
    call: BrokerCall<Credentials>,
    input: PendingActionInput<Config>,
  ): Promise<Record<string, unknown>>;
  /** A durable action (endpoint 7); the answer's `output`. */
  durableAction(
    call: BrokerCall<Credentials>,
    input: DurableActionInput<Config>,
  ): Promise<Record<string, unknown>>;

  /** Inbound events: whether the raw body's signature holds under the configuration's secret. */
  verifyEvent?(input: {
    rawBody: Buffer;
    headers: Record<string, string | string[] | undefined>;
    secret: string;
  }): boolean;
  /** Inbound events: what an event is about (any JSON the vendor sends; undefined when unreadable). */
  parseEvent?(body: unknown): VendorEvent | undefined;
  /** What an event means for one waiting run of the subject it names. */
  judgeEvent?(event: VendorEvent, run: RunView<Config>): EventVerdict;
  /** Asks the vendor for a run's result when its event may have been lost; undefined: no result yet. */
  poll?(call: BrokerCall<Credentials>, run: RunView<Config>): Promise<EventVerdict | undefined>;
}

export interface BrokerAction {
  id: string;
  label: string;
  /** JSON Schema of the action's `params` (the service answers 400 when they do not hold). */
  paramsSchema: Record<string, unknown>;
  /**
   * Whether the action's output holds no secret and is kept as the case's latest result of the
   * broker (a rescreen's hits). Tokens and links are never kept.
   */
  keepsOutput?: boolean;
}

/** A run told in words: a one-line answer, its facts, and a link to the subject at the vendor. */
export interface RunInWords {
  /** What the console's badge shows: `approved`, `declined`, `waiting`, `failed`… */
  status: string;
  summary: string;
  facts: Array<{ label: string; value: string }>;
  link?: { href: string; text: string };
}

/** One hit of a screening, as an analyst reviews it beside the case's subject. */
export interface ScreeningHit {
  /** The vendor's id of the listed entity. */
  id: string;
  name: string;
  birthDates: string[];
  /** ISO 3166-1 alpha-2 codes, lower case, as the vendor gives them. */
  nationalities: string[];
  /** Countries the listed entity is linked to (a company's, or a person's without a nationality). */
  countries: string[];
  datasets: string[];
  score: number;
  /** Whether it scored at or above the node's threshold (a match unless an analyst says not). */
  aboveThreshold: boolean;
}

/** What a broker operation gets: the vendor client (signed, timed, retried, recorded) and the credentials. */
export interface BrokerCall<Credentials> {
  vendor: VendorClient;
  credentials: Credentials;
}

/** The case as brokers see it. */
export interface CaseSubject {
  caseId: string;
  caseType: string;
  /** The case's `subject` (person, business or transaction sub-struct). */
  subject: Record<string, unknown>;
  externalCustomerId: string | null;
  /**
   * The verdict that holds for each hit analysts marked for the subject's entity (or for this
   * case, when the subject has no key), by vendor id: a screening broker reports the `no_match`
   * ones under `dismissedHits` instead of `results`, and counts the hits never marked in
   * `unreviewedHits`. Empty for brokers without `hitsOf`.
   */
  verdicts: ReadonlyMap<string, Verdict>;
}

export interface StartInput<Config> extends CaseSubject {
  runId: string;
  nodeId: string;
  config: Config;
}

export type StartResult =
  | { kind: "completed"; output: Record<string, unknown>; subjectRef?: string }
  | {
      kind: "waiting";
      /** The vendor's id of the subject, which its events name. */
      subjectRef: string;
      /** Kept on the run for later actions; never tokens. */
      state: Record<string, unknown>;
      /** Sent as `node.notification`; the service adds `pending_handle` to its output. */
      notification?: { payloadType: string; output: Record<string, unknown> };
    };

/** A run as brokers see it. */
export interface RunView<Config> {
  runId: string;
  nodeId: string;
  subjectRef: string | null;
  state: Record<string, unknown>;
  config: Config;
  output: Record<string, unknown> | null;
}

export interface PendingActionInput<Config> {
  actionId: string;
  params: Record<string, unknown>;
  run: RunView<Config>;
  case: CaseSubject;
}

export interface DurableActionInput<Config> {
  actionId: string;
  params: Record<string, unknown>;
  case: CaseSubject;
  /** The broker's runs on the case, newest first (at least one). */
  runs: RunView<Config>[];
}

export interface VendorEvent {
  type: string;
  /** The event as the vendor sent it. */
  body: Record<string, unknown>;
  /** The vendor's id of the subject the event is about. */
  subjectRef: string | null;
  /** The vendor's time of the event: a run ignores events older than the newest it applied. */
  occurredAt: Date | null;
}

export type EventVerdict =
  | { kind: "ignore"; reason: string }
  /** The run ends with this output and the workflow goes on. */
  | { kind: "resolve"; output: Record<string, unknown> }
  /** The run stays paused; this notification goes out (the service adds `pending_handle`). */
  | { kind: "notify"; payloadType: string; output: Record<string, unknown> };
