// Errors the SDK throws: the server's JSON error body as a class, and a
// network failure kept apart from it (a send retries the latter).

/** An answer of the server that is not a success, with its JSON error body. */
export class ConfabError extends Error {
  readonly status: number;
  /** For programs: `parameter_invalid`, `token_expired`, `contact_blocked`... */
  readonly code: string;
  /** `invalid_request` (4xx) or `api_error` (5xx). */
  readonly type: string;
  /** The offending parameter, or null. */
  readonly param: string | null;
  readonly requestId: string | null;
  /** Seconds, from `Retry-After` (429, 503). */
  readonly retryAfter: number | null;

  constructor(
    status: number,
    body: { type?: string; code?: string; message?: string; param?: string | null } | null,
    headers?: Headers,
  ) {
    const code = body?.code ?? (status >= 500 ? "internal_error" : "http_" + status);
    super(body?.message ?? `HTTP ${status}`);
    this.name = "ConfabError";
    this.status = status;
    this.code = code;
    this.type = body?.type ?? (status >= 500 ? "api_error" : "invalid_request");
    this.param = body?.param ?? null;
    this.requestId = headers?.get("X-Request-Id") ?? null;
    const after = Number(headers?.get("Retry-After"));
    this.retryAfter = Number.isFinite(after) && headers?.get("Retry-After") ? after : null;
  }
}

/** The request never got an answer: connection refused, reset, timed out. */
export class ConfabNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConfabNetworkError";
  }
}

/** Reads a non-2xx answer into a ConfabError (the body may not be JSON). */
export async function errorFrom(response: Response): Promise<ConfabError> {
  let body = null;
  try {
    const text = await response.text();
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return new ConfabError(response.status, body, response.headers);
}

export function isAbort(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    ((error as { name?: string }).name === "AbortError" ||
      (error as { name?: string }).name === "TimeoutError")
  );
}
