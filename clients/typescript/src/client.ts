// The client: what every app on confab would otherwise write by hand.
import createClient, { type Client } from "openapi-fetch";
import { ConfabError } from "./errors.js";
import { EventStream, type EventOptions, type Subscription, type Transport } from "./events.js";
import { Auth, Http, isRetryable, type RequestOptions, type TokenSource } from "./http.js";
import { Store } from "./store.js";
import type {
  Attachment,
  Block,
  Contact,
  Conversation,
  EventHandlers,
  Message,
  Page,
  paths,
  Report,
  StreamEvent,
} from "./types.js";
import { upload, type UploadInput, type UploadOptions } from "./upload.js";
import { backoff, sleep, uuid } from "./util.js";

export type ConfabOptions = {
  /** The server's base URL, e.g. `https://chat.example.com` (no `/v1`). */
  url: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /**
   * How the event stream authenticates: `ticket` (an event ticket in the
   * URL, what browsers need), `header` (Authorization, Node), `auto`
   * (ticket in a browser, header elsewhere; the default).
   */
  transport?: Transport;
  /** Milliseconds without a byte before the event stream reconnects (default 45 s). */
  idleTimeout?: number;
  /**
   * An event id to resume the stream after (e.g. `subscription.lastEventId`
   * kept across page loads): the events since are replayed first. One
   * older than the server keeps calls `onResync("expired_cursor")`.
   */
  resumeFrom?: string;
} & TokenSource;

/** An attachment to send: an upload (or its id), or a file at a URL. */
export type AttachmentInput =
  | string
  | { id: string }
  | Attachment
  | { file_url: string; filename: string; file_type?: string; file_size?: number };

export interface SendOptions {
  /** Uploads (by id or object) or by-URL files, at most 10. */
  attachments?: AttachmentInput[];
  /** The message this one quotes. */
  replyTo?: string;
  /** The thread (a top-level message) this one replies in. */
  parentId?: string;
  /** Contact ids mentioned. */
  mentions?: string[];
  /** A key of your own; by default a new UUID per send. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** Give up after this many milliseconds in all (default: never, until acknowledged). */
  timeout?: number;
  /** Called before each retry, with the failure that caused it. */
  onRetry?: (error: Error, attempt: number) => void;
}

export type ReportReason = "spam" | "harassment" | "inappropriate" | "other";

export class Confab {
  /** Every route of the API, typed from the server's OpenAPI document (openapi-fetch). */
  readonly api: Client<paths>;
  readonly http: Http;
  private readonly stream: EventStream;
  private storeInstance: Store | null = null;
  private readonly lastTyping = new Map<string, number>();

  constructor(options: ConfabOptions) {
    if (!options || typeof options.url !== "string") throw new TypeError("confab: url is required");
    if (!options.token && typeof options.getToken !== "function") {
      throw new TypeError("confab: give a token or a getToken function");
    }
    this.http = new Http(options.url, new Auth(options), options.fetch);
    this.api = createClient<paths>({ baseUrl: this.http.baseUrl, fetch: this.http.fetchForApi });
    this.stream = new EventStream(this.http, {
      transport: options.transport ?? "auto",
      idleTimeout: options.idleTimeout ?? 45_000,
      after: options.resumeFrom,
    });
  }

  /** A JSON request to any route (the SDK's own calls go through it). */
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<T> {
    return this.http.request<T>(method, path, options);
  }

  /**
   * The event stream: `handler` gets every event, typed by its `type`
   * (or pass one handler per type). One connection serves every
   * subscriber; it reconnects with backoff, resumes after the last event
   * and never delivers one twice.
   */
  events(handler: ((event: StreamEvent) => void) | EventHandlers, options?: EventOptions): Subscription {
    const fn =
      typeof handler === "function"
        ? handler
        : (event: StreamEvent) => (handler[event.type] as ((e: StreamEvent) => void) | undefined)?.(event);
    return this.stream.subscribe(fn, options);
  }

  /** The client-side state kept current from the stream; call `store.start()`. */
  get store(): Store {
    if (!this.storeInstance) this.storeInstance = new Store(this);
    return this.storeInstance;
  }

  /**
   * Sends a message, retried on network failures, 5xx, 409 and 429 with
   * the same `Idempotency-Key` until the server acknowledges it: a flaky
   * network never loses it nor stores it twice.
   */
  async send(conversationId: string, text: string, options: SendOptions = {}): Promise<Message> {
    const body: Record<string, unknown> = { conversation_id: conversationId };
    if (text !== "" || !options.attachments?.length) body.message = text;
    if (options.attachments?.length) body.attachments = options.attachments.map(attachmentBody);
    if (options.replyTo) body.reply_to_id = options.replyTo;
    if (options.parentId) body.parent_id = options.parentId;
    if (options.mentions?.length) body.mentions = options.mentions;
    const key = options.idempotencyKey ?? uuid();
    const deadline = options.timeout === undefined ? Infinity : Date.now() + options.timeout;
    for (let attempt = 0; ; attempt++) {
      try {
        const message = await this.http.request<Message>("POST", "/v1/messages", {
          body,
          headers: { "Idempotency-Key": key },
          signal: options.signal,
          timeout: Math.min(30_000, Math.max(1, deadline - Date.now())),
        });
        // The server takes a send as the end of typing: the next start counts at once.
        this.lastTyping.delete(conversationId);
        this.storeInstance?.applyMessage(message, true);
        return message;
      } catch (e) {
        if (options.signal?.aborted || !isRetryable(e)) throw e;
        let wait = backoff(attempt, 250, 10_000);
        if (e instanceof ConfabError && e.retryAfter !== null) wait = Math.max(wait, e.retryAfter * 1000);
        if (Date.now() + wait > deadline) throw e;
        options.onRetry?.(e as Error, attempt + 1);
        await sleep(wait, options.signal);
      }
    }
  }

  /** Uploads a file; attach it with `send(..., { attachments: [upload] })`. */
  upload(file: UploadInput, options?: UploadOptions): Promise<Attachment> {
    return upload(this.http, file, options);
  }

  /** The caller's own contact. */
  me(): Promise<Contact> {
    return this.request<Contact>("GET", "/v1/contacts/me");
  }

  contact(id: string): Promise<Contact> {
    return this.request<Contact>("GET", `/v1/contacts/${encodeURIComponent(id)}`);
  }

  /** The contact with this username (any letter case), or null. */
  async findContact(username: string): Promise<Contact | null> {
    const page = await this.request<Page<Contact>>("GET", "/v1/contacts", { query: { username } });
    return page.data[0] ?? null;
  }

  /** The one direct conversation with a contact, made if there is none. */
  async directConversation(contactId: string): Promise<Conversation> {
    const conversation = await this.request<Conversation>("POST", "/v1/conversations", {
      body: { contact_id: contactId, distinct: true },
    });
    this.storeInstance?.applyConversation(conversation);
    return conversation;
  }

  /** Shows others that the caller types (starts are sent at most every 2 s, as the server keeps them). */
  async typing(conversationId: string, state: "start" | "stop" = "start"): Promise<void> {
    const last = this.lastTyping.get(conversationId);
    if (state === "start") {
      if (last !== undefined && Date.now() - last < 2_000) return;
      this.lastTyping.set(conversationId, Date.now());
    } else {
      if (last === undefined) return;
      this.lastTyping.delete(conversationId);
    }
    await this.request("POST", `/v1/conversations/${encodeURIComponent(conversationId)}/typing`, {
      body: { state },
    });
  }

  async react(messageId: string, name: string): Promise<Message> {
    const me = await this.myUsername();
    const message = await this.request<Message>("PUT", `/v1/messages/${encodeURIComponent(messageId)}`, {
      body: { reactions: { [name]: [me] } },
    });
    this.storeInstance?.applyMessage(message);
    return message;
  }

  async unreact(messageId: string, name: string): Promise<Message> {
    const message = await this.request<Message>(
      "DELETE",
      `/v1/messages/${encodeURIComponent(messageId)}/reactions/${encodeURIComponent(name)}`,
    );
    this.storeInstance?.applyMessage(message);
    return message;
  }

  async edit(messageId: string, text: string): Promise<Message> {
    const message = await this.request<Message>("PUT", `/v1/messages/${encodeURIComponent(messageId)}`, {
      body: { message: text },
    });
    this.storeInstance?.applyMessage(message);
    return message;
  }

  async deleteMessage(messageId: string): Promise<void> {
    await this.request("DELETE", `/v1/messages/${encodeURIComponent(messageId)}`);
    this.storeInstance?.removeMessage(messageId);
  }

  /** Messages of the caller's conversations containing every term (each at least 3 characters). */
  search(
    query: string,
    options: { conversationId?: string; senderId?: string; limit?: number; startingAfter?: string } = {},
  ): Promise<Page<Message>> {
    return this.request<Page<Message>>("GET", "/v1/messages/search", {
      query: {
        query,
        conversation_id: options.conversationId,
        sender_id: options.senderId,
        limit: options.limit,
        starting_after: options.startingAfter,
      },
    });
  }

  block(contactId: string): Promise<Block> {
    return this.request<Block>("POST", `/v1/contacts/${encodeURIComponent(contactId)}/block`);
  }

  async unblock(contactId: string): Promise<void> {
    await this.request("DELETE", `/v1/contacts/${encodeURIComponent(contactId)}/block`);
  }

  /** Whether the caller blocked this contact. */
  async isBlocked(contactId: string): Promise<boolean> {
    try {
      await this.request("GET", `/v1/contacts/${encodeURIComponent(contactId)}/block`);
      return true;
    } catch (e) {
      if (e instanceof ConfabError && e.status === 404) return false;
      throw e;
    }
  }

  report(
    target: { messageId: string } | { contactId: string },
    reason: ReportReason,
    description?: string,
  ): Promise<Report> {
    const body: Record<string, unknown> = { reason };
    if ("messageId" in target) body.message_id = target.messageId;
    else body.contact_id = target.contactId;
    if (description) body.description = description;
    return this.request<Report>("POST", "/v1/reports", { body });
  }

  /** Closes the event stream (and the store's subscription). */
  close(): void {
    this.storeInstance?.stop();
    this.stream.stop();
  }

  private username: string | null = null;
  private async myUsername(): Promise<string> {
    if (!this.username) this.username = (await this.me()).username;
    return this.username;
  }
}

function attachmentBody(a: AttachmentInput): Record<string, unknown> {
  if (typeof a === "string") return { id: a };
  if ("file_url" in a && !("id" in a)) return { ...a };
  return { id: (a as { id: string }).id };
}
