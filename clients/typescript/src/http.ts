// The transport every request goes through: the Bearer header, one
// refresh and retry on 401 `token_expired`, JSON in and out, errors as
// ConfabError, network failures as ConfabNetworkError.
import { ConfabError, ConfabNetworkError, errorFrom, isAbort } from "./errors.js";
import { linkSignals } from "./util.js";

export type TokenSource =
  | { token: string; getToken?: undefined }
  | { token?: string; getToken: (context: { reason: "initial" | "expired" }) => string | Promise<string> };

/** Holds the current token; a refresh is shared by every request that saw it expire. */
export class Auth {
  private current: Promise<string> | null = null;
  private currentValue: string | null = null;
  private refreshing: Promise<string> | null = null;

  constructor(private readonly source: TokenSource) {
    if (source.token) {
      this.currentValue = source.token;
      this.current = Promise.resolve(source.token);
    }
  }

  get canRefresh(): boolean {
    return typeof this.source.getToken === "function";
  }

  token(): Promise<string> {
    if (!this.current) {
      this.current = this.fetchToken("initial");
    }
    return this.current;
  }

  /** A new token after `expired` was refused; concurrent callers share one call of getToken. */
  refresh(expired: string): Promise<string> {
    if (!this.source.getToken) return Promise.resolve(expired);
    if (this.currentValue !== null && this.currentValue !== expired) {
      return Promise.resolve(this.currentValue);
    }
    if (!this.refreshing) {
      this.refreshing = this.fetchToken("expired").finally(() => {
        this.refreshing = null;
      });
      this.current = this.refreshing;
    }
    return this.refreshing;
  }

  private async fetchToken(reason: "initial" | "expired"): Promise<string> {
    const getToken = this.source.getToken;
    if (!getToken) throw new Error("confab: no token and no getToken");
    try {
      const token = await getToken({ reason });
      if (typeof token !== "string" || token === "") {
        throw new Error("confab: getToken returned no token");
      }
      this.currentValue = token;
      return token;
    } catch (e) {
      // The next request asks again instead of reusing a failed promise.
      this.current = null;
      throw e;
    }
  }
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  /** A JSON body (serialized once, so a retry sends the same bytes). */
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Milliseconds before the attempt is given up (default 30 s). */
  timeout?: number;
}

export class Http {
  readonly baseUrl: string;
  readonly auth: Auth;
  private readonly fetchImpl: typeof fetch;

  constructor(url: string, auth: Auth, fetchImpl?: typeof fetch) {
    this.baseUrl = url.replace(/\/+$/, "");
    this.auth = auth;
    this.fetchImpl = fetchImpl ?? ((input, init) => globalThis.fetch(input, init));
  }

  url(path: string, query?: RequestOptions["query"]): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
    }
    return u.toString();
  }

  /**
   * fetch with the Bearer token: on 401 `token_expired` asks getToken for
   * a new one and sends the request once more. `make` builds the request
   * afresh for each attempt (a body can be read only once).
   */
  async authorized(make: (token: string) => Request | Promise<Request>): Promise<Response> {
    return this.withToken(async (token) => this.send(await make(token)));
  }

  /** Runs `attempt` with the token; once more with a fresh one after 401 `token_expired`. */
  async withToken(attempt: (token: string) => Promise<Response>): Promise<Response> {
    const token = await this.auth.token();
    const response = await attempt(token);
    if (response.status !== 401 || !this.auth.canRefresh) return response;
    const error = await errorFrom(response.clone());
    if (error.code !== "token_expired") return response;
    const fresh = await this.auth.refresh(token);
    return attempt(fresh);
  }

  /** The fetch openapi-fetch is given: adds the token and refreshes it like every request. */
  readonly fetchForApi = async (input: Request): Promise<Response> => {
    const template = input.clone();
    return this.authorized((token) => {
      const request = template.clone();
      const headers = new Headers(request.headers);
      headers.set("Authorization", `Bearer ${token}`);
      return new Request(request, { headers });
    });
  };

  /** fetch without a token (an event ticket is in the URL), network failures as ConfabNetworkError. */
  plain(request: Request): Promise<Response> {
    return this.send(request);
  }

  private async send(request: Request): Promise<Response> {
    try {
      return await this.fetchImpl(request);
    } catch (e) {
      if (isAbort(e)) throw e;
      throw new ConfabNetworkError(`${request.method} ${new URL(request.url).pathname}: ${String((e as Error)?.message ?? e)}`, {
        cause: e,
      });
    }
  }

  /** A JSON request: the parsed answer, or a ConfabError. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.raw(method, path, options);
    if (!response.ok) throw await errorFrom(response);
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The response itself, whatever its status (the body serialized once). */
  async raw(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = this.url(path, options.query);
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const { signal, done } = linkSignals([options.signal], options.timeout ?? 30_000);
    try {
      const response = await this.authorized((token) => {
        const headers = new Headers(options.headers);
        headers.set("Authorization", `Bearer ${token}`);
        if (body !== undefined) headers.set("Content-Type", "application/json");
        return new Request(url, { method, headers, body, signal });
      });
      // The body is read by the caller: keep the timeout only for the head.
      return response;
    } catch (e) {
      if (isAbort(e) && !options.signal?.aborted) {
        throw new ConfabNetworkError(`${method} ${path}: no answer in time`, { cause: e });
      }
      throw e;
    } finally {
      done();
    }
  }
}

export function isRetryable(error: unknown): boolean {
  if (error instanceof ConfabNetworkError) return true;
  if (error instanceof ConfabError) {
    return (
      error.status >= 500 ||
      error.status === 408 ||
      error.status === 409 /* the same key still in flight */ ||
      (error.status === 429 && error.code !== "idempotency_quota")
    );
  }
  return false;
}
