/** A small client of the operator API, used by the CLI. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const detail =
      body && typeof body === "object" && "error" in body ? String((body as { error: unknown }).error) : "";
    super(`HTTP ${status}${detail ? `: ${detail}` : ""}`);
    this.name = "ApiError";
  }
}

export class OperatorClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    if (!this.token) {
      throw new Error(
        "no operator token: pass --token, set CDS_ADMIN_TOKEN, or run where CDS_DATA_DIR holds the embedded token",
      );
    }
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(
        `cannot reach the service at ${this.baseUrl} (${(err as Error).message}); is it running?`,
      );
    }
    const text = await res.text();
    const parsed = text ? (JSON.parse(text) as unknown) : undefined;
    if (!res.ok) throw new ApiError(res.status, parsed);
    return parsed as T;
  }
}
