// One event stream per client, shared by every subscriber (the store
// included): a contact may hold only a few streams at once.
//
// The stream is read with fetch in Node and in browsers alike. In a
// browser it is opened with an event ticket in the URL (no Authorization
// header); in Node with the header. It reconnects with backoff and resumes
// after the last event it delivered (`Last-Event-ID`, or `after=` with a
// ticket so that no preflight is needed), and never delivers an event id
// twice.
import { ConfabError, ConfabNetworkError, errorFrom, isAbort } from "./errors.js";
import type { Http } from "./http.js";
import { SseParser } from "./sse.js";
import type { StreamEvent, Ticket } from "./types.js";
import { backoff, RecentIds, sleep } from "./util.js";

export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

export type Transport = "auto" | "ticket" | "header";

export interface EventOptions {
  /** Called when the connection's state changes. */
  onStateChange?: (state: ConnectionState) => void;
  /**
   * Called when events may have been missed and cannot be replayed (the
   * resume point is older than the events kept, or the stream reconnected
   * before any event gave it one): read the lists again.
   */
  onResync?: (reason: "expired_cursor" | "gap") => void;
  /** A failure the stream cannot recover from (e.g. a revoked token); the stream is closed. */
  onError?: (error: Error) => void;
}

export interface Subscription {
  /** Stops this subscriber; the stream closes when no subscriber is left. */
  close(): void;
  readonly state: ConnectionState;
  /** The id of the last event delivered. */
  readonly lastEventId: string | undefined;
}

interface Subscriber {
  handler: (event: StreamEvent) => void;
  options: EventOptions;
}

export interface EventStreamSettings {
  transport: Transport;
  /** Milliseconds without a byte (the server comments every 15 s) before the connection is judged dead. */
  idleTimeout: number;
  /** A resume point to start from (e.g. kept across page loads). */
  after?: string;
}

function isBrowser(): boolean {
  return typeof window !== "undefined" && typeof document !== "undefined";
}

export class EventStream {
  private readonly subscribers = new Set<Subscriber>();
  private readonly seen = new RecentIds();
  private lastId: string | undefined;
  private current: ConnectionState = "closed";
  private controller: AbortController | null = null;
  private running: Promise<void> | null = null;
  private ticket: Ticket | null = null;
  private retryMs = 1000;
  private connectedOnce = false;

  constructor(
    private readonly http: Http,
    private readonly settings: EventStreamSettings,
  ) {
    this.lastId = settings.after;
  }

  get state(): ConnectionState {
    return this.current;
  }

  get lastEventId(): string | undefined {
    return this.lastId;
  }

  subscribe(handler: (event: StreamEvent) => void, options: EventOptions = {}): Subscription {
    const subscriber: Subscriber = { handler, options };
    this.subscribers.add(subscriber);
    if (!this.running) this.start();
    else options.onStateChange?.(this.current);
    const stream = this;
    return {
      close: () => {
        this.subscribers.delete(subscriber);
        if (this.subscribers.size === 0) this.stop();
      },
      get state() {
        return stream.current;
      },
      get lastEventId() {
        return stream.lastId;
      },
    };
  }

  /** Ends the stream for every subscriber. */
  stop(): void {
    this.subscribers.clear();
    this.controller?.abort();
    this.controller = null;
    this.setState("closed");
  }

  private start(): void {
    const controller = new AbortController();
    this.controller = controller;
    this.running = this.loop(controller.signal).finally(() => {
      if (this.controller === controller) this.controller = null;
      this.running = null;
    });
  }

  private setState(state: ConnectionState): void {
    if (state === this.current) return;
    this.current = state;
    for (const s of [...this.subscribers]) s.options.onStateChange?.(state);
  }

  private useTicket(): boolean {
    const t = this.settings.transport;
    return t === "ticket" || (t === "auto" && isBrowser());
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted && this.subscribers.size > 0) {
      this.setState(this.connectedOnce ? "reconnecting" : "connecting");
      let wait = 0;
      try {
        const opened = await this.connect(signal);
        if (opened) failures = 0;
        // The server closed the stream (a restart, a shutdown): come back
        // after the delay its `retry:` asked for.
        wait = this.retryMs;
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof ConfabError) {
          if (e.status === 400 && e.param === "after") {
            // The resume point is gone (older than the events kept).
            this.lastId = undefined;
            this.resync("expired_cursor");
            continue;
          }
          if (e.status === 401) {
            if (this.useTicket() && this.ticket) {
              // The ticket expired or was refused: one more try with a new one.
              this.ticket = null;
              if (failures++ === 0) continue;
            }
            if (e.code !== "token_expired" || !this.http.auth.canRefresh) {
              this.fail(e);
              return;
            }
          }
          if (e.status === 400 || e.status === 403 || e.status === 404) {
            this.fail(e);
            return;
          }
          wait = Math.max((e.retryAfter ?? 0) * 1000, backoff(failures++));
        } else if (e instanceof ConfabNetworkError || isAbort(e) || e instanceof TypeError) {
          wait = backoff(failures++);
        } else {
          this.fail(e instanceof Error ? e : new Error(String(e)));
          return;
        }
      }
      if (signal.aborted || this.subscribers.size === 0) break;
      this.setState("reconnecting");
      try {
        await sleep(wait, signal);
      } catch {
        break;
      }
    }
    if (this.subscribers.size === 0 || signal.aborted) this.setState("closed");
  }

  private fail(error: Error): void {
    const subscribers = [...this.subscribers];
    this.subscribers.clear();
    this.setStateFor(subscribers, "closed");
    for (const s of subscribers) s.options.onError?.(error);
  }

  private setStateFor(subscribers: Subscriber[], state: ConnectionState): void {
    this.current = state;
    for (const s of subscribers) s.options.onStateChange?.(state);
  }

  private resync(reason: "expired_cursor" | "gap"): void {
    for (const s of [...this.subscribers]) {
      try {
        s.options.onResync?.(reason);
      } catch (e) {
        reportHandlerError(e);
      }
    }
  }

  private async ticketFor(signal: AbortSignal): Promise<string> {
    const now = Date.now() / 1000;
    if (!this.ticket || this.ticket.expires_at - 30 < now) {
      this.ticket = await this.http.request<Ticket>("POST", "/v1/events/tickets", { signal });
    }
    return this.ticket.ticket;
  }

  /** Opens one connection and reads it to its end; true once it was open. */
  private async connect(outer: AbortSignal): Promise<boolean> {
    const controller = new AbortController();
    const abort = () => controller.abort();
    outer.addEventListener("abort", abort, { once: true });
    const resumedFrom = this.lastId;
    let idle: ReturnType<typeof setTimeout> | undefined;
    const touch = () => {
      if (idle) clearTimeout(idle);
      idle = setTimeout(() => controller.abort(), this.settings.idleTimeout);
    };
    try {
      touch();
      let response: Response;
      if (this.useTicket()) {
        const ticket = await this.ticketFor(controller.signal);
        const url = this.http.url("/v1/events", { ticket, after: resumedFrom });
        response = await this.http.plain(
          new Request(url, { headers: { Accept: "text/event-stream" }, signal: controller.signal }),
        );
      } else {
        response = await this.http.authorized((token) => {
          const headers = new Headers({ Accept: "text/event-stream", Authorization: `Bearer ${token}` });
          if (resumedFrom) headers.set("Last-Event-ID", resumedFrom);
          return new Request(this.http.url("/v1/events"), { headers, signal: controller.signal });
        });
      }
      if (!response.ok) throw await errorFrom(response);
      if (!response.body) throw new ConfabNetworkError("the event stream has no body");

      let opened = false;
      const parser = new SseParser({
        onMessage: (m) => this.deliver(m.id, m.event, m.data),
        onRetry: (ms) => {
          this.retryMs = Math.min(Math.max(ms, 250), 60_000);
        },
        onComment: (text) => {
          if (!opened && text === "connected") {
            opened = true;
            this.onOpen(resumedFrom);
          }
        },
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      touch();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          touch();
          if (!opened) {
            // A server without the `: connected` comment is open at its first byte.
            opened = true;
            this.onOpen(resumedFrom);
          }
          parser.push(decoder.decode(value, { stream: true }));
        }
      } finally {
        reader.releaseLock?.();
      }
      return opened;
    } catch (e) {
      if (outer.aborted) throw e;
      if (isAbort(e)) throw new ConfabNetworkError("the event stream went silent", { cause: e });
      if (e instanceof TypeError) throw new ConfabNetworkError(String(e.message), { cause: e });
      throw e;
    } finally {
      if (idle) clearTimeout(idle);
      outer.removeEventListener("abort", abort);
      controller.abort();
    }
  }

  private onOpen(resumedFrom: string | undefined): void {
    const first = !this.connectedOnce;
    this.connectedOnce = true;
    this.setState("open");
    // Reconnected without a place to resume from: whatever happened while
    // disconnected cannot be replayed.
    if (!first && !resumedFrom) this.resync("gap");
  }

  private deliver(id: string | undefined, type: string, data: string): void {
    let parsed: { id?: string; type?: string; created_at?: number; payload?: unknown };
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    let event: StreamEvent;
    if (type === "typing") {
      event = { type: "typing", payload: parsed as never };
    } else {
      const eventId = id ?? parsed.id;
      if (!eventId) return;
      if (this.seen.has(eventId)) return;
      this.seen.add(eventId);
      this.lastId = eventId;
      event = {
        id: eventId,
        type: (parsed.type ?? type) as never,
        created_at: parsed.created_at ?? 0,
        payload: parsed.payload as never,
      } as StreamEvent;
    }
    for (const s of [...this.subscribers]) {
      try {
        s.handler(event);
      } catch (e) {
        reportHandlerError(e);
      }
    }
  }
}

function reportHandlerError(e: unknown): void {
  // A subscriber's bug must not end the stream for the others.
  console.error("confab: an event handler threw", e);
}
