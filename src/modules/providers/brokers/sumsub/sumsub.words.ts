import type { RunInWords, RunView } from "../../broker.js";

/** Sumsub's rejection labels in plain words (its documented list; others are shown as written). */
const REJECT_LABELS: Record<string, string> = {
  FORGERY: "the document looks forged",
  DOCUMENT_TEMPLATE: "the document is a template found online",
  LOW_QUALITY: "the images are too poor to read",
  SPAM: "the files sent are not what was asked",
  NOT_DOCUMENT: "the file is not a document",
  SELFIE_MISMATCH: "the selfie does not match the document's photo",
  ID_INVALID: "the identity document is not valid",
  FOREIGNER: "the document's country is not accepted",
  DUPLICATE: "this person already has an applicant",
  BAD_AVATAR: "the profile photo is not acceptable",
  WRONG_USER_REGION: "the applicant's region is not served",
  INCOMPLETE_DOCUMENT: "the document is incomplete",
  BLACKLIST: "the applicant is on the client's blocklist",
  UNSATISFACTORY_PHOTOS: "the photos are not satisfactory",
  DOCUMENT_PAGE_MISSING: "a page of the document is missing",
  DOCUMENT_DAMAGED: "the document is damaged",
  REGULATIONS_VIOLATIONS: "the applicant breaks the client's rules",
  INCONSISTENT_PROFILE: "the applicant's data and documents disagree",
  PROBLEMATIC_APPLICANT_DATA: "the applicant's data is problematic",
  ADDITIONAL_DOCUMENT_REQUIRED: "another document is required",
  AGE_REQUIREMENT_MISMATCH: "the applicant is too young or too old",
  EXPERIENCE_REQUIREMENT_MISMATCH: "the applicant lacks the required experience",
  CRIMINAL: "the applicant has a criminal record",
  WRONG_ADDRESS: "the proof of address does not match",
  GRAPHIC_EDITOR: "the document was edited with a graphics program",
  DOCUMENT_DEPRIVED: "the document was declared lost or stolen",
  COMPROMISED_PERSONS: "the applicant is a compromised person",
  PEP: "the applicant is a politically exposed person",
  ADVERSE_MEDIA: "the applicant appears in adverse media",
  FRAUDULENT_PATTERNS: "fraudulent behaviour was detected",
  SANCTIONS: "the applicant is on a sanctions list",
  NOT_ALL_CHECKS_COMPLETED: "not every check was completed",
  FRONT_SIDE_MISSING: "the document's front side is missing",
  BACK_SIDE_MISSING: "the document's back side is missing",
  SCREENSHOTS: "screenshots were sent instead of photos",
  BLACK_AND_WHITE: "the images are black and white",
  EXPIRATION_DATE: "the document has expired",
  UNFILLED_ID: "the document's fields cannot be read",
  BAD_SELFIE: "the selfie is not acceptable",
  BAD_VIDEO_SELFIE: "the video selfie is not acceptable",
  BAD_FACE_MATCHING: "the face could not be matched",
  BAD_PROOF_OF_IDENTITY: "the proof of identity is not acceptable",
  BAD_PROOF_OF_ADDRESS: "the proof of address is not acceptable",
  BAD_PROOF_OF_PAYMENT: "the proof of payment is not acceptable",
  SELFIE_WITH_PAPER: "a selfie holding a paper is required",
  FRAUDULENT_LIVENESS: "the liveness check found a spoof",
  REQUESTED_DATA_MISMATCH: "the data given does not match the documents",
  OTHER: "another reason (see the vendor's comment)",
};

/** A rejection label in words, with the label itself for searching the vendor's documentation. */
export function rejectLabelInWords(label: string): string {
  const words = REJECT_LABELS[label];
  return words ? `${words} (${label})` : label.replaceAll("_", " ").toLowerCase();
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** Where an operator opens the applicant in the vendor's dashboard. */
export function applicantUrl(applicantId: string): string {
  return `https://cockpit.sumsub.com/checkus#/applicant/${encodeURIComponent(applicantId)}/basicInfo`;
}

/** A Sumsub run in words: the review's answer, its rejection labels, the applicant. */
export function describeSumsubRun(run: RunView<unknown> & { status: string }): RunInWords {
  const output = run.output ?? {};
  const applicantId = str(output.applicant_id) ?? run.subjectRef ?? undefined;
  const externalUserId = str(run.state.externalUserId);
  const facts = [
    ...(applicantId ? [{ label: "Applicant", value: applicantId }] : []),
    ...(externalUserId ? [{ label: "External user id", value: externalUserId }] : []),
    ...(str(run.state.levelName) ? [{ label: "Level", value: str(run.state.levelName) as string }] : []),
  ];
  const link = applicantId
    ? { href: applicantUrl(applicantId), text: "Open the applicant in Sumsub" }
    : undefined;
  const labels = Array.isArray(output.reject_labels)
    ? output.reject_labels.filter((l): l is string => typeof l === "string")
    : [];
  const withLabels = labels.map((l, i) => ({ label: i === 0 ? "Why" : "", value: rejectLabelInWords(l) }));
  let words: Pick<RunInWords, "status" | "summary">;
  if (run.status === "waiting") {
    words = { status: "waiting", summary: "Waiting for the applicant to complete the verification." };
  } else if (run.status === "timed_out") {
    words = { status: "timed_out", summary: "The vendor gave no result before the deadline." };
  } else if (run.status !== "completed") {
    words = {
      status: run.status,
      summary: `The verification did not complete (${run.status.replaceAll("_", " ")}).`,
    };
  } else if (output.review_answer === "GREEN") {
    words = { status: "approved", summary: "Verified: Sumsub's review passed the applicant (GREEN)." };
  } else if (output.review_answer === "RED") {
    const final = output.reject_type === "FINAL";
    words = {
      status: "declined",
      summary: final
        ? "Rejected for good: Sumsub's review refused the applicant (RED, final)."
        : `Rejected: Sumsub's review refused the applicant (RED${str(output.reject_type) ? `, ${String(output.reject_type).toLowerCase()}` : ""}).`,
    };
  } else {
    words = { status: "completed", summary: "The verification ended without a review answer." };
  }
  return { ...words, facts: [...withLabels, ...facts], ...(link ? { link } : {}) };
}
