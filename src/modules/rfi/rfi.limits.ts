/** The limits of the spec's Limits section, and the ones this service adds to raising a request. */
export const RFI_LIMITS = {
  fieldsPerAnswer: 100,
  /** One field value, as UTF-8 JSON. */
  fieldValueBytes: 4096,
  /** Keys, values (as UTF-8 JSON) and labels of one answer together. */
  fieldsTotalBytes: 16384,
  labelBytes: 256,
  documentsPerAnswer: 10,
  slotsPerRequest: 30,
  slotsPerCase: 100,
  fileMinBytes: 1,
  fileMaxBytes: 20_971_520,
  filenameBytes: 255,
  contentTypes: ["application/pdf", "image/jpeg", "image/png"] as readonly string[],
  // Raising a request.
  addressLength: 320,
  ccAddresses: 20,
  subjectLength: 1000,
  bodyLength: 65_536,
  templateIdLength: 200,
  webhookKeyLength: 100,
  actorLength: 200,
  /** Pending requests one case may have at once. */
  pendingPerCase: 20,
  /** Requests a case record (and the console's case page) shows: the most recent. */
  shownPerCase: 50,
  /** The furthest deadline a request may be given. */
  maxDeadlineDays: 365,
} as const;

export const FIELD_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** The kind of the engine wait an information request node pauses on. */
export const RFI_WAIT = "rfi";
