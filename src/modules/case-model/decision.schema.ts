import { Type } from "typebox";
import { DECISION_SOURCES, DECISION_VALUES } from "./case-status.js";

/** A decision as every answer and webhook shows it (`decision`, `decisionHistory[]`). */
export const Decision = Type.Object({
  value: Type.Enum(DECISION_VALUES),
  source: Type.Enum(DECISION_SOURCES),
  actor: Type.String(),
  decidedAt: Type.String({ format: "date-time" }),
  reason: Type.Optional(Type.String()),
});
