import pg from "pg";

type Handler = (payload: string) => void;

/**
 * One dedicated connection per process for LISTEN. If it drops, it reconnects with backoff,
 * listens again and calls every handler once with an empty payload, since notifications sent
 * while it was away are lost and the handlers' owners must look for themselves.
 */
export class PgListener {
  readonly #handlers = new Map<string, Set<Handler>>();
  #client: pg.Client | undefined;
  #connecting: Promise<pg.Client> | undefined;
  #closed = false;
  #retryMs = 100;

  constructor(
    private readonly connectionString: string,
    private readonly types: pg.CustomTypesConfig,
  ) {}

  async listen(channel: string, handler: Handler): Promise<() => Promise<void>> {
    let set = this.#handlers.get(channel);
    const first = !set;
    if (!set) {
      set = new Set();
      this.#handlers.set(channel, set);
    }
    set.add(handler);
    const client = await this.#connect();
    if (first) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    return async () => {
      set.delete(handler);
      if (set.size === 0 && this.#handlers.get(channel) === set) {
        this.#handlers.delete(channel);
        await this.#client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
      }
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #connect(): Promise<pg.Client> {
    if (this.#client) return Promise.resolve(this.#client);
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #open(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.connectionString,
      types: this.types,
      application_name: "cds-listener",
    });
    client.on("notification", (msg) => {
      for (const handler of this.#handlers.get(msg.channel) ?? []) handler(msg.payload ?? "");
    });
    client.on("error", () => this.#lost(client));
    client.on("end", () => this.#lost(client));
    await client.connect();
    for (const channel of this.#handlers.keys()) {
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    }
    this.#client = client;
    this.#retryMs = 100;
    return client;
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => {});
    if (this.#closed) return;
    const retry = (): void => {
      if (this.#closed) return;
      this.#connect().then(
        () => {
          for (const handlers of this.#handlers.values()) for (const h of handlers) h("");
        },
        () => {
          this.#retryMs = Math.min(this.#retryMs * 2, 10_000);
          setTimeout(retry, this.#retryMs).unref();
        },
      );
    };
    setTimeout(retry, this.#retryMs).unref();
  }
}
