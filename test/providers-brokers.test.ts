import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaseSubject } from "../src/modules/providers/broker.js";
import { openSanctionsBroker } from "../src/modules/providers/brokers/opensanctions/opensanctions.broker.js";
import { OpenSanctionsSimulator } from "../src/modules/providers/brokers/opensanctions/opensanctions.simulator.js";
import { sumsubBroker } from "../src/modules/providers/brokers/sumsub/sumsub.broker.js";
import { SumsubSimulator } from "../src/modules/providers/brokers/sumsub/sumsub.simulator.js";
import type { RunningSimulator } from "../src/modules/providers/simulator.js";
import {
  type CallRecord,
  type Signer,
  VendorClient,
  VendorError,
} from "../src/modules/providers/vendor-http.js";

const CREDS = { appToken: "sbx:test-app-token", secretKey: "test-secret-key" };
let sumsub: SumsubSimulator;
let sumsubServer: RunningSimulator;
let os: OpenSanctionsSimulator;
let osServer: RunningSimulator;

beforeAll(async () => {
  sumsub = new SumsubSimulator({ ...CREDS });
  sumsubServer = await sumsub.listen(0);
  os = new OpenSanctionsSimulator({ apiKey: "os-key" });
  osServer = await os.listen(0);
});
afterAll(async () => {
  await sumsubServer.close();
  await osServer.close();
});

function client(
  baseUrl: string,
  signer: Signer,
  records: CallRecord[],
  extra: { timeoutMs?: number; backoffMs?: number[] } = {},
) {
  return new VendorClient({
    baseUrl,
    timeoutMs: extra.timeoutMs ?? 2000,
    allowPrivateTargets: true,
    signer,
    ...(extra.backoffMs ? { backoffMs: extra.backoffMs } : {}),
    onCall: async (r) => {
      records.push(r);
    },
  });
}

const person: CaseSubject = {
  caseId: "6f1c9c1e-3f7a-4d43-9a7e-111111111111",
  caseType: "KYC",
  subject: {
    person: {
      firstName: "Ada",
      lastName: "Lovelace",
      dateOfBirth: "1815-12-10",
      nationality: "GB",
      email: "ada@example.com",
      address: { line1: "12 St James's Square", city: "London", country: "GB" },
    },
  },
  externalCustomerId: "cust-ada",
  verdicts: new Map(),
};

const config = { levelName: "basic-kyc", allowRetries: false, ttlInSeconds: 600 };

describe("the sumsub broker against the simulator", () => {
  it("signs its requests, finds or creates one applicant, prefills it, and mints a token and a link", async () => {
    const records: CallRecord[] = [];
    const call = {
      vendor: client(sumsubServer.url, sumsubBroker.signer(CREDS), records),
      credentials: CREDS,
    };
    const input = { ...person, runId: "r1", nodeId: "kyc", config };
    const first = await sumsubBroker.start(call, input);
    const again = await sumsubBroker.start(call, input);
    if (first.kind !== "waiting" || again.kind !== "waiting") throw new Error("sumsub pauses");
    expect(again.subjectRef).toBe(first.subjectRef);
    const applicants = [...sumsub.applicants.values()].filter((a) => a.externalUserId === "cust-ada");
    expect(applicants).toHaveLength(1);
    expect(applicants[0]?.fixedInfo).toMatchObject({
      firstName: "Ada",
      lastName: "Lovelace",
      dob: "1815-12-10",
      nationality: "GBR",
      addresses: [{ street: "12 St James's Square", town: "London", country: "GBR" }],
    });
    expect(first.notification?.payloadType).toBe("idv-application-start");
    expect(first.notification?.output).toMatchObject({
      applicant_id: first.subjectRef,
      external_user_id: "cust-ada",
      verification_url: expect.stringMatching(new RegExp(`^${sumsubServer.url}/websdk/p/`)),
      sdk_token: expect.stringMatching(/^_act-sbx-/),
    });
    // The second start met the vendor's 409 and found the applicant it had made.
    expect(records.map((r) => `${r.action}:${r.httpStatus}`)).toEqual([
      "create_applicant:200",
      "sdk_token:200",
      "websdk_link:200",
      "create_applicant:409",
      "find_applicant:200",
      "prefill:200",
      "sdk_token:200",
      "websdk_link:200",
    ]);
  });

  it("is refused by the vendor with a wrong secret key, without retrying", async () => {
    const records: CallRecord[] = [];
    const wrong = { ...CREDS, secretKey: "not-the-secret" };
    const call = {
      vendor: client(sumsubServer.url, sumsubBroker.signer(wrong), records),
      credentials: wrong,
    };
    const err = await sumsubBroker
      .start(call, { ...person, runId: "r2", nodeId: "kyc", config })
      .catch((e) => e);
    expect(err).toBeInstanceOf(VendorError);
    expect(err.kind).toBe("rejected");
    expect(records).toEqual([
      expect.objectContaining({ action: "create_applicant", httpStatus: 401, outcome: "rejected" }),
    ]);
  });

  it("tries a failing call three times in all, 1 s and then 2 s apart", async () => {
    const records: CallRecord[] = [];
    const call = {
      vendor: client(sumsubServer.url, sumsubBroker.signer(CREDS), records),
      credentials: CREDS,
    };
    await fetch(`${sumsubServer.url}/_simulator/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ action: "create_applicant", status: 503, times: 3 }),
    });
    const started = Date.now();
    const err = await sumsubBroker
      .start(call, { ...person, externalCustomerId: "cust-retry", runId: "r3", nodeId: "kyc", config })
      .catch((e) => e);
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(VendorError);
    expect(err.kind).toBe("unavailable");
    expect(records.map((r) => [r.attempt, r.httpStatus, r.outcome])).toEqual([
      [1, 503, "failed"],
      [2, 503, "failed"],
      [3, 503, "failed"],
    ]);
    expect(elapsed).toBeGreaterThanOrEqual(3000);
  });

  it("gives up on a call that exceeds its deadline, and records the timeout", async () => {
    const records: CallRecord[] = [];
    const call = {
      vendor: client(sumsubServer.url, sumsubBroker.signer(CREDS), records, {
        timeoutMs: 200,
        backoffMs: [],
      }),
      credentials: CREDS,
    };
    await fetch(`${sumsubServer.url}/_simulator/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ action: "create_applicant", delayMs: 1000, times: 1 }),
    });
    const err = await sumsubBroker
      .start(call, { ...person, externalCustomerId: "cust-slow", runId: "r4", nodeId: "kyc", config })
      .catch((e) => e);
    expect(err).toBeInstanceOf(VendorError);
    expect(records[0]).toMatchObject({
      httpStatus: null,
      outcome: "failed",
      error: "timed out after 200 ms",
    });
  });
});

describe("the opensanctions broker against the simulator", () => {
  it("screens a person with the match API and reports the vendor's results", async () => {
    const records: CallRecord[] = [];
    const creds = { apiKey: "os-key" };
    const call = {
      vendor: client(osServer.url, openSanctionsBroker.signer(creds), records),
      credentials: creds,
    };
    const cfg = openSanctionsBroker.parseConfig({});
    const hit = await openSanctionsBroker.start(call, {
      caseId: "c1",
      caseType: "KYC",
      subject: { person: { firstName: "Boris", lastName: "Blacklistov", dateOfBirth: "1961-03-14" } },
      externalCustomerId: null,
      verdicts: new Map(),
      runId: "r5",
      nodeId: "screen",
      config: cfg,
    });
    const boris = {
      id: "sim-person-0001",
      caption: "Boris Blacklistov",
      score: 1,
      datasets: ["sim_sanctions"],
      birthDates: ["1961-03-14"],
      nationalities: ["ru"],
      countries: ["ru"],
    };
    expect(hit).toEqual({
      kind: "completed",
      output: {
        matched: true,
        top_score: 1,
        threshold: 0.7,
        results: [boris],
        dismissedHits: [],
        unreviewedHits: 1,
      },
    });
    const screenWith = (verdicts: Map<string, "match" | "no_match">) =>
      openSanctionsBroker.start(call, {
        caseId: "c1",
        caseType: "KYC",
        subject: { person: { firstName: "Boris", lastName: "Blacklistov", dateOfBirth: "1961-03-14" } },
        externalCustomerId: null,
        verdicts,
        runId: "r5",
        nodeId: "screen",
        config: cfg,
      });
    // A hit marked "match" stays a result, and is no longer unreviewed.
    expect(await screenWith(new Map([["sim-person-0001", "match"]]))).toEqual({
      kind: "completed",
      output: {
        matched: true,
        top_score: 1,
        threshold: 0.7,
        results: [boris],
        dismissedHits: [],
        unreviewedHits: 0,
      },
    });
    // A hit an analyst marked "no_match" for the subject is reported apart: not a result, so the
    // screening is not matched by it and its score is not the top score.
    const again = await screenWith(new Map([["sim-person-0001", "no_match"]]));
    expect(again).toEqual({
      kind: "completed",
      output: {
        matched: false,
        top_score: 0,
        threshold: 0.7,
        results: [],
        dismissedHits: [boris],
        unreviewedHits: 0,
      },
    });
    expect(openSanctionsBroker.hitsOf?.((again as { output: Record<string, unknown> }).output)).toEqual([
      {
        id: "sim-person-0001",
        name: "Boris Blacklistov",
        birthDates: ["1961-03-14"],
        nationalities: ["ru"],
        countries: ["ru"],
        datasets: ["sim_sanctions"],
        score: 1,
        aboveThreshold: true,
      },
    ]);
    const clean = await openSanctionsBroker.start(call, {
      caseId: "c2",
      caseType: "KYB",
      subject: { business: { legalName: "Harmless Bakery GmbH", country: "DE" } },
      externalCustomerId: null,
      verdicts: new Map(),
      runId: "r6",
      nodeId: "screen",
      config: cfg,
    });
    expect(clean).toEqual({
      kind: "completed",
      output: {
        matched: false,
        top_score: 0,
        threshold: 0.7,
        results: [],
        dismissedHits: [],
        unreviewedHits: 0,
      },
    });
    const wrong = { apiKey: "nope" };
    const refused = await openSanctionsBroker
      .start(
        { vendor: client(osServer.url, openSanctionsBroker.signer(wrong), records), credentials: wrong },
        {
          caseId: "c3",
          caseType: "KYC",
          subject: person.subject,
          externalCustomerId: null,
          verdicts: new Map(),
          runId: "r7",
          nodeId: "s",
          config: cfg,
        },
      )
      .catch((e) => e);
    expect(refused).toBeInstanceOf(VendorError);
    expect(refused.httpStatus).toBe(401);
  });
});
