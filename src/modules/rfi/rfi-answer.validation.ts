import { isUuid } from "../../platform/crypto.js";
import { AppError } from "../../platform/errors.js";
import { isUnstorableText } from "../../platform/input-guard.js";
import { FIELD_KEY_PATTERN, RFI_LIMITS, utf8Bytes } from "./rfi.limits.js";
import type { StoredField } from "./rfi.tables.js";

export interface ParsedAnswer {
  fields: StoredField[];
  documents: Array<{ uploadId: string; label: string | null }>;
}

/** Field values are the answer's own: text that cannot be stored is 422 `invalid_field_value` here. */
export const ANSWER_VALUES = /^fields\[\d+\]\.value$/;

const structure = (message: string) => new AppError("invalid_request", message);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Checks an answer's body in the contract's order, after the request itself was found answerable:
 * 400 for its structure, then 422 for the fields (`invalid_field_key`, `invalid_field_value`,
 * `fields_too_large`), then `too_many_documents`. Whether each document's upload is in place is
 * the caller's last check. Unknown properties are ignored (a `tenantId` in particular).
 */
export function parseAnswer(body: unknown): ParsedAnswer {
  const { fields, documents } = checkStructure(body);
  checkFields(fields);
  if (documents.length > RFI_LIMITS.documentsPerAnswer) {
    throw new AppError(
      "too_many_documents",
      `an answer attaches at most ${RFI_LIMITS.documentsPerAnswer} documents; this one has ${documents.length}`,
    );
  }
  return { fields, documents };
}

function checkStructure(body: unknown): ParsedAnswer {
  if (!isObject(body)) {
    throw structure("the body must be a JSON object with `fields` and/or `documents`");
  }
  const rawFields = body.fields ?? [];
  const rawDocuments = body.documents ?? [];
  if (!Array.isArray(rawFields)) throw structure("fields must be an array");
  if (!Array.isArray(rawDocuments)) throw structure("documents must be an array");

  const fields = rawFields.map((raw, i): StoredField => {
    if (!isObject(raw)) throw structure(`fields[${i}] must be an object with key, value and label`);
    if (typeof raw.key !== "string") throw structure(`fields[${i}].key is required and must be a string`);
    const label = raw.label ?? null;
    if (label !== null && typeof label !== "string") throw structure(`fields[${i}].label must be a string`);
    const value = raw.value === undefined ? null : raw.value;
    return label === null
      ? { key: raw.key, value: value as StoredField["value"] }
      : { key: raw.key, value: value as StoredField["value"], label };
  });

  const seen = new Map<string, number>();
  const documents = rawDocuments.map((raw, i) => {
    if (!isObject(raw)) throw structure(`documents[${i}] must be an object with uploadId and label`);
    const { uploadId } = raw;
    if (typeof uploadId !== "string")
      throw structure(`documents[${i}].uploadId is required and must be a string`);
    if (uploadId === "") throw structure(`documents[${i}].uploadId must not be empty`);
    if (!isUuid(uploadId)) throw structure(`documents[${i}].uploadId must be a UUID`);
    const normalized = uploadId.toLowerCase();
    const first = seen.get(normalized);
    if (first !== undefined) {
      throw structure(
        `documents[${i}].uploadId repeats documents[${first}].uploadId; attach each upload once`,
      );
    }
    seen.set(normalized, i);
    const label = raw.label ?? null;
    if (label !== null && typeof label !== "string")
      throw structure(`documents[${i}].label must be a string`);
    if (label !== null && utf8Bytes(label) > RFI_LIMITS.labelBytes) {
      throw structure(`documents[${i}].label is longer than ${RFI_LIMITS.labelBytes} bytes`);
    }
    return { uploadId: normalized, label };
  });

  if (fields.length === 0 && documents.length === 0) {
    throw structure("an answer needs at least one field or one document");
  }
  return { fields, documents };
}

function checkFields(fields: StoredField[]): void {
  if (fields.length > RFI_LIMITS.fieldsPerAnswer) {
    throw new AppError(
      "fields_too_large",
      `an answer has at most ${RFI_LIMITS.fieldsPerAnswer} fields; this one has ${fields.length}`,
    );
  }
  const keys = new Set<string>();
  let total = 0;
  fields.forEach((field, i) => {
    const { key, value, label } = field;
    if (!FIELD_KEY_PATTERN.test(key)) {
      throw new AppError(
        "invalid_field_key",
        `fields[${i}].key must match ${FIELD_KEY_PATTERN.source} (a letter or underscore, then letters, digits or underscores)`,
        { extra: { key } },
      );
    }
    if (keys.has(key)) {
      throw new AppError(
        "invalid_field_key",
        `fields[${i}].key repeats an earlier key; each key appears once`,
        {
          extra: { key },
        },
      );
    }
    keys.add(key);
    if (typeof value === "object" && value !== null) {
      throw new AppError(
        "invalid_field_value",
        `fields[${i}].value must be a string, number, boolean or null, not an ${Array.isArray(value) ? "array" : "object"}`,
        { extra: { key } },
      );
    }
    if (typeof value === "string" && isUnstorableText(value)) {
      throw new AppError(
        "invalid_field_value",
        `fields[${i}].value contains a NUL character or a lone UTF-16 surrogate, which cannot be stored`,
        { extra: { key } },
      );
    }
    const valueBytes = utf8Bytes(JSON.stringify(value));
    if (valueBytes > RFI_LIMITS.fieldValueBytes) {
      throw new AppError(
        "invalid_field_value",
        `fields[${i}].value is ${valueBytes} bytes as UTF-8 JSON; the limit is ${RFI_LIMITS.fieldValueBytes}`,
        { extra: { key } },
      );
    }
    const labelBytes = label === undefined ? 0 : utf8Bytes(label);
    if (labelBytes > RFI_LIMITS.labelBytes) {
      throw new AppError(
        "fields_too_large",
        `fields[${i}].label is ${labelBytes} bytes; the limit is ${RFI_LIMITS.labelBytes}`,
      );
    }
    total += utf8Bytes(key) + valueBytes + labelBytes;
  });
  if (total > RFI_LIMITS.fieldsTotalBytes) {
    throw new AppError(
      "fields_too_large",
      `the fields take ${total} bytes (keys, values as JSON, and labels); the limit is ${RFI_LIMITS.fieldsTotalBytes}`,
    );
  }
}
