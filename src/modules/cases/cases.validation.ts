import type { ErrorDetail } from "../../platform/errors.js";
import type { CaseType } from "../case-model/index.js";

/**
 * The submission rules a JSON Schema cannot state: the sub-struct matching `type`, ISO codes,
 * calendar dates and `eventTimestamp`. Every problem is reported, each naming its field.
 */
const CURRENCIES = new Set(Intl.supportedValuesOf("currency"));
const regionNames = new Intl.DisplayNames(["en"], { type: "region", fallback: "code" });

export function isCurrency(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && CURRENCIES.has(code);
}

/** What ICU answered for each two-letter code asked (at most 676): asking it costs microseconds. */
const countries = new Map<string, boolean>();

export function isCountry(code: string): boolean {
  if (!/^[A-Z]{2}$/.test(code)) return false;
  let known = countries.get(code);
  if (known === undefined) {
    try {
      known = regionNames.of(code) !== code;
    } catch {
      known = false;
    }
    countries.set(code, known);
  }
  return known;
}

export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return date.toISOString().slice(0, 10) === value;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 timestamp with an offset, or undefined when it does not parse. */
export function parseRfc3339(value: string): Date | undefined {
  if (!RFC3339.test(value)) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return undefined;
  // Date accepts 2024-02-30 by rolling over; the calendar part must survive the round trip.
  return isCalendarDate(value.slice(0, 10)) ? date : undefined;
}

type Json = Record<string, unknown>;

const SUBSTRUCT: Record<CaseType, "person" | "business" | "transaction"> = {
  KYC: "person",
  KYB: "business",
  Transaction: "transaction",
};

function checkCountry(value: unknown, path: string, problems: ErrorDetail[]): void {
  if (typeof value === "string" && !isCountry(value)) {
    problems.push({ path, message: "must be an ISO 3166-1 alpha-2 country code" });
  }
}

function checkDate(value: unknown, path: string, problems: ErrorDetail[]): void {
  if (typeof value === "string" && !isCalendarDate(value)) {
    problems.push({ path, message: "must be a date YYYY-MM-DD" });
  }
}

function checkIdentifiers(identifiers: unknown, path: string, problems: ErrorDetail[]): void {
  if (!Array.isArray(identifiers)) return;
  identifiers.forEach((id: Json, i) => {
    checkCountry(id?.country, `${path}[${i}].country`, problems);
  });
}

function checkAddress(address: unknown, path: string, problems: ErrorDetail[]): void {
  const a = address as Json | undefined;
  if (a) checkCountry(a.country, `${path}.country`, problems);
}

/** A person or a business of the subject: its date and country fields, address and identifiers. */
function checkParty(
  party: Json | undefined,
  name: "person" | "business",
  [dateField, countryField]: [string, string],
  problems: ErrorDetail[],
): void {
  if (!party) return;
  const path = `subject.${name}`;
  checkDate(party[dateField], `${path}.${dateField}`, problems);
  checkCountry(party[countryField], `${path}.${countryField}`, problems);
  checkAddress(party.address, `${path}.address`, problems);
  checkIdentifiers(party.identifiers, `${path}.identifiers`, problems);
}

export interface SubmissionFacts {
  eventTimestamp: Date | null;
  externalCustomerId: string | null;
}

/** What the rules beyond the schema read of a submission; `type` is unknown when it is invalid. */
export interface SubmissionShape {
  type: CaseType | undefined;
  subject: Json;
  eventTimestamp?: string | undefined;
  payload?: Json | undefined;
}

/** Checks what the schema could not; returns the facts derived on the way. */
export function checkSubmission(
  input: SubmissionShape,
  now: Date,
  maxSkewSeconds: number,
  problems: ErrorDetail[],
): SubmissionFacts {
  const present = (["person", "business", "transaction"] as const).filter(
    (k) => input.subject[k] !== undefined,
  );
  if (input.type) {
    const expected = SUBSTRUCT[input.type];
    if (!present.includes(expected)) {
      problems.push({ path: `subject.${expected}`, message: `is required for a ${input.type} case` });
    }
    for (const other of present.filter((k) => k !== expected)) {
      problems.push({ path: `subject.${other}`, message: `must not be set on a ${input.type} case` });
    }
  }

  checkParty(input.subject.person as Json | undefined, "person", ["dateOfBirth", "nationality"], problems);
  checkParty(
    input.subject.business as Json | undefined,
    "business",
    ["incorporationDate", "country"],
    problems,
  );
  const transaction = input.subject.transaction as Json | undefined;
  if (transaction) {
    if (typeof transaction.currency === "string" && !isCurrency(transaction.currency)) {
      problems.push({ path: "subject.transaction.currency", message: "must be an ISO 4217 currency code" });
    }
    const parties = Array.isArray(transaction.parties) ? (transaction.parties as Json[]) : [];
    parties.forEach((p, i) => {
      checkIdentifiers(p?.identifiers, `subject.transaction.parties[${i}].identifiers`, problems);
    });
  }

  let eventTimestamp: Date | null = null;
  if (input.eventTimestamp === undefined) {
    if (input.type === "Transaction") {
      problems.push({ path: "eventTimestamp", message: "is required for a Transaction case" });
    }
  } else {
    const parsed = parseRfc3339(input.eventTimestamp);
    if (!parsed) {
      problems.push({ path: "eventTimestamp", message: "must be an RFC 3339 timestamp with an offset" });
    } else if (parsed.getTime() > now.getTime() + maxSkewSeconds * 1000) {
      problems.push({
        path: "eventTimestamp",
        message: `is more than ${maxSkewSeconds} seconds in the future`,
      });
    } else {
      eventTimestamp = parsed;
    }
  }

  return { eventTimestamp, externalCustomerId: externalCustomerIdOf(input.subject) };
}

/** The first identifier of type `external_customer_id` in the subject (person, business, parties). */
export function externalCustomerIdOf(subject: Json): string | null {
  const lists: unknown[] = [
    (subject.person as Json | undefined)?.identifiers,
    (subject.business as Json | undefined)?.identifiers,
    ...(((subject.transaction as Json | undefined)?.parties as Json[] | undefined) ?? []).map(
      (p) => p?.identifiers,
    ),
  ];
  for (const list of lists) {
    if (!Array.isArray(list)) continue;
    const found = (list as Json[]).find((id) => id?.type === "external_customer_id");
    if (found && typeof found?.value === "string") return found.value;
  }
  return null;
}
