/**
 * The baseline of the `cases` scenario: a bare Fastify server whose `POST /cases` does one
 * INSERT of the request body per request and answers 201, on the database the service would use
 * (PostgreSQL at DATABASE_URL, else PGlite in CDS_DATA_DIR), through the same driver. What the
 * service does beyond "store the submission" is measured against it. Prints its URL when ready.
 */
import Fastify from "fastify";
import { sql } from "kysely";
import { uuid } from "../../src/platform/crypto.js";
import { openDb } from "../../src/platform/db/index.js";

const databaseUrl = process.env.DATABASE_URL || undefined;
const db = await openDb(databaseUrl ? { databaseUrl } : { dataDir: process.env.CDS_DATA_DIR ?? "./data" });
await sql`CREATE TABLE IF NOT EXISTS bare_cases (
  id uuid PRIMARY KEY,
  body json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
)`.execute(db.root);

const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
app.post("/cases", async (request, reply) => {
  const id = uuid();
  await sql`INSERT INTO bare_cases (id, body) VALUES (${id}, ${JSON.stringify(request.body)})`.execute(
    db.root,
  );
  return reply.status(201).send({ caseId: id, status: "received" });
});
const url = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`bare insert server listening at ${url}\n`);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void app
      .close()
      .then(() => db.close())
      .then(() => process.exit(0));
  });
}
