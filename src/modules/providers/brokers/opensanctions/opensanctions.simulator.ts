import { safeEqual } from "../../../../platform/crypto.js";
import type { SimReply, SimRequest, SimRoute } from "../../simulator.js";
import { controlRoute, json, Simulator, vendorRoute } from "../../simulator.js";

export interface SimEntity {
  id: string;
  schema: "Person" | "Company";
  caption: string;
  names: string[];
  birthDate?: string;
  countries?: string[];
  datasets: string[];
}

export const OPENSANCTIONS_SIMULATOR_DEFAULTS = { apiKey: "simulator-api-key" } as const;

/** Made-up entities, so that a laptop demo screens against something. */
export const SAMPLE_ENTITIES: SimEntity[] = [
  {
    id: "sim-person-0001",
    schema: "Person",
    caption: "Boris Blacklistov",
    names: ["Boris Blacklistov", "Boris B. Blacklistov"],
    birthDate: "1961-03-14",
    countries: ["ru"],
    datasets: ["sim_sanctions"],
  },
  {
    id: "sim-person-0002",
    schema: "Person",
    caption: "Polly Exposed",
    names: ["Polly Exposed", "Pauline Exposed"],
    birthDate: "1975-09-02",
    countries: ["gb"],
    datasets: ["sim_peps"],
  },
  {
    id: "sim-company-0001",
    schema: "Company",
    caption: "Darkwater Shell Holdings Ltd",
    names: ["Darkwater Shell Holdings Ltd", "Darkwater Shell Holdings"],
    countries: ["cy"],
    datasets: ["sim_sanctions"],
  },
];

const tokens = (name: string) =>
  new Set(
    name
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((t) => t.length > 1 && !["ltd", "llc", "inc", "gmbh", "sa", "plc"].includes(t)),
  );

/** A simple stand-in for yente's scoring: shared name tokens, nudged by the birth date. */
export function scoreOf(entity: SimEntity, names: string[], birthDates: string[]): number {
  let best = 0;
  for (const q of names) {
    const qt = tokens(q);
    for (const n of entity.names) {
      const et = tokens(n);
      const shared = [...qt].filter((t) => et.has(t)).length;
      const score = qt.size === 0 || et.size === 0 ? 0 : shared / Math.max(qt.size, et.size);
      best = Math.max(best, score);
    }
  }
  if (best > 0 && entity.birthDate && birthDates.length > 0) {
    best = birthDates.includes(entity.birthDate) ? Math.min(1, best + 0.1) : best * 0.8;
  }
  return Math.round(best * 1000) / 1000;
}

/** An OpenSanctions (yente) stand-in: the match API over a few made-up entities. */
export class OpenSanctionsSimulator extends Simulator {
  readonly entities: SimEntity[];

  constructor(private readonly options: { apiKey: string; entities?: SimEntity[] }) {
    super();
    this.entities = [...(options.entities ?? SAMPLE_ENTITIES)];
  }

  protected authenticate(req: SimRequest): SimReply | undefined {
    const header = req.headers.authorization;
    const expected = `ApiKey ${this.options.apiKey}`;
    if (typeof header !== "string" || !safeEqual(header, expected)) {
      return json(401, { detail: "Invalid or missing API key" });
    }
    return undefined;
  }

  protected routes(): SimRoute[] {
    return [
      vendorRoute("POST", /^\/match\/([a-z0-9_]+)$/, "match", (req) => {
        const queries = (req.body as { queries?: Record<string, unknown> } | undefined)?.queries;
        if (!queries || typeof queries !== "object") return json(400, { detail: "queries is required" });
        const responses: Record<string, unknown> = {};
        for (const [key, raw] of Object.entries(queries)) {
          const q = (raw ?? {}) as { schema?: string; properties?: Record<string, unknown> };
          const props = q.properties ?? {};
          const list = (k: string) => (Array.isArray(props[k]) ? (props[k] as unknown[]).map(String) : []);
          const results = this.entities
            .filter((e) => q.schema === undefined || e.schema === q.schema)
            .map((e) => {
              const score = scoreOf(e, list("name"), list("birthDate"));
              return {
                id: e.id,
                caption: e.caption,
                schema: e.schema,
                score,
                match: score >= 0.7,
                datasets: e.datasets,
                properties: {
                  name: e.names,
                  ...(e.birthDate ? { birthDate: [e.birthDate] } : {}),
                  ...(e.countries ? { country: e.countries } : {}),
                  ...(e.schema === "Person" && e.countries ? { nationality: e.countries } : {}),
                },
              };
            })
            .filter((r) => r.score > 0.3)
            .sort((a, b) => b.score - a.score);
          responses[key] = { status: 200, results, total: { value: results.length, relation: "eq" } };
        }
        return json(200, { responses, limit: 5 });
      }),
      controlRoute("POST", /^\/_simulator\/entities$/, "entities", (req) => {
        const entity = req.body as SimEntity | undefined;
        if (!entity || typeof entity.id !== "string" || !Array.isArray(entity.names)) {
          return json(400, { detail: "an entity needs an id and names" });
        }
        this.entities.push({ ...entity, datasets: entity.datasets ?? ["sim_sanctions"] });
        return json(200, { ok: true });
      }),
    ];
  }
}
