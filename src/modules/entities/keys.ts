import { createHash } from "node:crypto";
import { IDENTIFIER_TYPES } from "../cases/index.js";

// The keys a case's subject resolves to (contract section 7, "Entities"): the customer, and
// every identifier of the person, the business and each transaction party, normalised so that
// the same IBAN or e-mail written two ways is one entity.

/** An entity's key on a case: its type and normalised value, and the role it had there. */
export interface EntityKey {
  type: string;
  value: string;
  role: string;
}

/** The longest value a key keeps (an identifier's limit in the case schema). */
const MAX_VALUE = 256;

/**
 * A value as entities of this type store and match it: trimmed; an `email` lower-cased; an
 * `iban` upper-cased without spaces; a `phone` only `+` and digits. Empty when nothing is left.
 */
export function normalizeValue(type: string, value: string): string {
  const trimmed = value.trim();
  switch (type) {
    case "email":
      return trimmed.toLowerCase();
    case "iban":
      return trimmed.replace(/\s+/g, "").toUpperCase();
    case "phone":
      return trimmed.replace(/[^+\d]/g, "");
    default:
      return trimmed;
  }
}

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;

/** The entity type an identifier's type resolves to: `external_customer_id` is the customer. */
function typeOf(identifierType: string): string {
  return identifierType === "external_customer_id" ? "customer" : identifierType;
}

/**
 * The entity keys of a case's subject, each once (the first role wins): the customer id, the
 * person's and the business's identifiers, e-mail, phone and registration number (role
 * `subject`), and each transaction party's identifiers (the party's role).
 */
export function entityKeysOf(subject: Json, externalCustomerId: string | null): EntityKey[] {
  const keys = new Map<string, EntityKey>();
  const add = (type: string, raw: unknown, role: string) => {
    if (typeof raw !== "string") return;
    const value = normalizeValue(type, raw).slice(0, MAX_VALUE);
    const id = `${type}\u0000${value}`;
    if (value !== "" && !keys.has(id)) keys.set(id, { type, value, role });
  };
  const identifiers = (holder: Json | undefined, role: string) => {
    const list = holder?.identifiers;
    if (!Array.isArray(list)) return;
    for (const item of list) {
      const identifier = asObject(item);
      if (typeof identifier?.type === "string") add(typeOf(identifier.type), identifier.value, role);
    }
  };
  if (externalCustomerId !== null) add("customer", externalCustomerId, "subject");
  const person = asObject(subject.person);
  identifiers(person, "subject");
  add("email", person?.email, "subject");
  add("phone", person?.phone, "subject");
  const business = asObject(subject.business);
  identifiers(business, "subject");
  add("registration_number", business?.registrationNumber, "subject");
  const parties = asObject(subject.transaction)?.parties;
  if (Array.isArray(parties)) {
    for (const party of parties.map(asObject)) {
      identifiers(party, typeof party?.role === "string" ? party.role : "other");
    }
  }
  return [...keys.values()];
}

/**
 * The id of the tenant's entity of this key: derived from the key, so that the statement that
 * accepts a case links it without reading the entity first, and two cases that see a new key at
 * once name the same entity.
 */
export function entityId(tenantId: string, type: string, value: string): string {
  const hex = createHash("sha256").update(`${tenantId}\u0000${type}\u0000${value}`).digest("hex");
  // A version 8 (custom) UUID: the hash's first 122 bits, with the version and variant set.
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The ids of the tenant's entities that a case's subject itself resolves to (role `subject`): its
 * customer first, then its identifiers, e-mail, phone and registration number.
 */
export function subjectEntityIds(
  tenantId: string,
  subject: Json,
  externalCustomerId: string | null,
): string[] {
  return entityKeysOf(subject, externalCustomerId)
    .filter((k) => k.role === "subject")
    .map((k) => entityId(tenantId, k.type, k.value));
}

/** The types of entities: the customer, and every identifier type but the customer id's. */
export const ENTITY_TYPES = [
  "customer",
  ...IDENTIFIER_TYPES.filter(
    (t): t is Exclude<(typeof IDENTIFIER_TYPES)[number], "external_customer_id"> =>
      t !== "external_customer_id",
  ),
] as const;

/** One of ENTITY_TYPES. */
export type EntityType = (typeof ENTITY_TYPES)[number];

/** A transaction's amount and currency, as history sums them (none for other cases). */
export function transactionAmount(subject: Json): { amount: number | null; currency: string | null } {
  const transaction = asObject(subject.transaction);
  const amount = transaction?.amount;
  const currency = transaction?.currency;
  return {
    amount: typeof amount === "number" && Number.isFinite(amount) ? amount : null,
    currency: typeof currency === "string" ? currency.trim().toUpperCase() : null,
  };
}
