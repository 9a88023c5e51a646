import type { AppContext } from "../../platform/context.js";
import type { RunInWords } from "./broker.js";
import { brokerOf } from "./brokers/index.js";
import { listRunsOfCase } from "./providers.repo.js";
import { runViewOf } from "./providers.service.js";

/** A provider node's run on a case, told in words by its broker (an identity check). */
export interface RunResultView {
  brokerId: string;
  brokerLabel: string;
  nodeId: string;
  at: string;
  words: RunInWords;
}

/** The case's runs whose broker tells them in words, newest first. */
export async function getRunResults(
  ctx: AppContext,
  tenantId: string,
  caseId: string,
): Promise<RunResultView[]> {
  const runs = await listRunsOfCase(ctx.db.root, tenantId, caseId);
  return runs.flatMap((run) => {
    const broker = brokerOf(run.broker_id);
    if (!broker?.describeRun) return [];
    const words = broker.describeRun({ ...runViewOf(broker, run), status: run.status });
    return [
      {
        brokerId: broker.id,
        brokerLabel: broker.label,
        nodeId: run.node_id,
        at: run.updated_at.toISOString(),
        words,
      },
    ];
  });
}
