// The client-side state a chat UI renders from: conversations (with their
// unread counts and the peers' presence), the loaded pages of messages and
// threads, who is typing, read positions; kept current from the event
// stream the way the server's own rules move them (a message moves its
// conversation's activity and the others' unread counts, an opening resets
// them...), and read again from the lists whenever events may have been
// missed. A UI subscribes and re-renders from `getState()`.
import type { Confab } from "./client.js";
import { ConfabError } from "./errors.js";
import type { ConnectionState, Subscription } from "./events.js";
import {
  isDeleted,
  type Attachment,
  type Contact,
  type Conversation,
  type ConversationRead,
  type Group,
  type Message,
  type Page,
  type PresenceChanged,
  type ReadPosition,
  type StreamEvent,
} from "./types.js";
import { TypingBoard } from "./typing.js";
import { RecentIds, sleep } from "./util.js";

export interface MessageList {
  /** Newest first, like the server's pages. */
  readonly items: readonly Message[];
  /** More, older messages on the server. */
  readonly hasMore: boolean;
  readonly loading: boolean;
}

export interface StoreState {
  readonly me: Contact | null;
  /** The first list of conversations is loaded. */
  readonly ready: boolean;
  readonly connection: ConnectionState;
  /** Latest activity first, as the server lists them. */
  readonly conversations: readonly Conversation[];
  readonly hasMoreConversations: boolean;
  readonly contacts: ReadonlyMap<string, Contact>;
  readonly groups: ReadonlyMap<string, Group>;
  /** A conversation's loaded top-level messages, by conversation id. */
  readonly messages: ReadonlyMap<string, MessageList>;
  /** A thread's loaded replies, by the thread's first message id. */
  readonly threads: ReadonlyMap<string, MessageList>;
  /** The contacts typing in each conversation now (the caller never among them). */
  readonly typing: ReadonlyMap<string, readonly string[]>;
  /** Each member's read position, by conversation and contact id (when the server has them). */
  readonly reads: ReadonlyMap<string, ReadonlyMap<string, ReadPosition>>;
  /** What the server turned out to support: null until known. */
  readonly features: { readonly presence: boolean | null; readonly readReceipts: boolean | null };
  /** Unread messages over the loaded conversations. */
  readonly unreadTotal: number;
}

interface MutableList {
  items: Message[];
  hasMore: boolean;
  loading: boolean;
}

const PAGE = 50;

function activity(c: Conversation): number {
  return c.last_active_at ?? c.created_at;
}


/** When a message last changed (`updated_at`, null on servers that leave it unset until a change). */
function changedAt(m: Message): number {
  return m.updated_at ?? m.created_at;
}

/**
 * Places a message that just arrived among messages held newest first:
 * before every message of its second or older. The server orders messages
 * of the same second by microseconds, which no client sees; within a
 * second the store keeps the order in which they arrived.
 */
function insertArrival(items: Message[], m: Message): void {
  const i = items.findIndex((x) => x.created_at <= m.created_at);
  if (i < 0) items.push(m);
  else items.splice(i, 0, m);
}

export class Store {
  private me: Contact | null = null;
  private ready = false;
  private connection: ConnectionState = "closed";
  private readonly conversations = new Map<string, Conversation>();
  /**
   * The order in which conversations last became active, as seen here:
   * the server orders by activity in microseconds but shows whole
   * seconds, so within one second the latest event decides.
   */
  private readonly touched = new Map<string, number>();
  private touches = 0;
  private sorted: Conversation[] | null = [];
  private hasMoreConversations = false;
  private readonly contacts = new Map<string, Contact>();
  private readonly groups = new Map<string, Group>();
  private readonly messages = new Map<string, MutableList>();
  private readonly threads = new Map<string, MutableList>();
  private readonly typing = new TypingBoard(() => this.changed());
  private readonly reads = new Map<string, Map<string, ReadPosition>>();
  private features: { presence: boolean | null; readReceipts: boolean | null } = {
    presence: null,
    readReceipts: null,
  };
  /** Messages whose creation was counted into their conversation. */
  private readonly counted = new RecentIds(20_000);
  private readonly listeners = new Set<(state: StoreState) => void>();
  private state: StoreState | null = null;
  private notifyQueued = false;
  private subscription: Subscription | null = null;
  private starting: Promise<void> | null = null;
  private storedEvents = 0;
  private syncTimer: ReturnType<typeof setTimeout> | null = null;
  private syncing: Promise<void> | null = null;
  private syncAgain = false;
  private readonly pendingContacts = new Map<string, Promise<void>>();
  private readonly pendingGroups = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(private readonly client: Confab) {}

  // --- reading ------------------------------------------------------------

  getState(): StoreState {
    if (!this.state) this.state = this.build();
    return this.state;
  }

  /** Calls `callback` with the new state after each change (batched); returns an unsubscribe. */
  subscribe(callback: (state: StoreState) => void): () => void {
    this.listeners.add(callback);
    return () => this.listeners.delete(callback);
  }

  conversation(id: string): Conversation | undefined {
    return this.conversations.get(id);
  }

  contact(id: string | null | undefined): Contact | undefined {
    return id ? this.contacts.get(id) : undefined;
  }

  /** What a UI shows for a contact: its display name, else its username. */
  static nameOf(contact: Pick<Contact, "username" | "display_name"> | undefined | null): string {
    if (!contact) return "";
    return (contact.display_name ?? "").trim() || contact.username;
  }

  /** A conversation's title: the peer's name, or the group's. */
  title(conversation: Conversation): string {
    if (conversation.group_id) return this.groups.get(conversation.group_id)?.name ?? "Group";
    return Store.nameOf(this.contacts.get(conversation.contact_id ?? "")) || "…";
  }

  // --- lifecycle ------------------------------------------------------------

  /** Subscribes to the event stream and loads the first conversations; resolves when they are in. */
  start(): Promise<void> {
    if (!this.starting) {
      this.stopped = false;
      this.starting = (async () => {
        this.me = await this.client.me();
        this.contacts.set(this.me.id, this.me);
        this.subscription = this.client.events((e) => this.onEvent(e), {
          onStateChange: (s) => {
            this.connection = s;
            this.changed();
          },
          onResync: () => this.scheduleSync(0),
        });
        await this.sync();
        this.ready = true;
        this.changed();
      })();
      this.starting.catch(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }

  stop(): void {
    this.stopped = true;
    this.subscription?.close();
    this.subscription = null;
    this.starting = null;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.typing.stop();
  }

  // --- loading ------------------------------------------------------------

  /** The next page of conversations. */
  async loadMoreConversations(): Promise<void> {
    const last = this.sortedConversations().at(-1);
    const page = await this.client.request<Page<Conversation>>("GET", "/v1/conversations", {
      query: { limit: PAGE, starting_after: last?.id },
    });
    for (const c of page.data) this.applyConversation(c);
    this.hasMoreConversations = page.has_more;
    this.changed();
  }

  /** Loads a conversation's first page of messages, or the next older one. */
  loadMessages(conversationId: string, limit = 30): Promise<void> {
    return this.loadList(this.messages, conversationId, { conversation_id: conversationId }, limit);
  }

  /** Loads a thread's first page of replies, or the next older one. */
  loadThread(parentId: string, limit = 30): Promise<void> {
    return this.loadList(this.threads, parentId, { parent_id: parentId }, limit);
  }

  private async loadList(
    lists: Map<string, MutableList>,
    key: string,
    filter: Record<string, string>,
    limit: number,
  ): Promise<void> {
    let list = lists.get(key);
    if (list?.loading) return;
    if (list && !list.hasMore && list.items.length > 0) return;
    if (!list) {
      list = { items: [], hasMore: true, loading: true };
      lists.set(key, list);
    }
    const oldest = list.items.at(-1);
    list.loading = true;
    this.changed();
    try {
      const page = await this.client.request<Page<Message>>("GET", "/v1/messages", {
        query: { ...filter, limit, starting_after: oldest?.id },
      });
      const current = lists.get(key);
      if (!current) return;
      for (const m of page.data) this.noteContact(m.contact as Contact);
      const held = new Map(current.items.map((m) => [m.id, m]));
      const newer = (m: Message) => {
        const h = held.get(m.id);
        return h && changedAt(h) > changedAt(m) ? h : m;
      };
      let items: Message[];
      if (!oldest) {
        // The first page, in the server's order; what events brought
        // meanwhile and the page lacks goes in as arrivals.
        items = page.data.map(newer);
        const inPage = new Set(items.map((m) => m.id));
        for (const m of current.items) if (!inPage.has(m.id)) insertArrival(items, m);
      } else {
        // An older page follows what is held, in the server's order.
        items = [...current.items];
        const at = new Map(items.map((m, i) => [m.id, i]));
        for (const m of page.data) {
          const i = at.get(m.id);
          if (i === undefined) items.push(m);
          else items[i] = newer(m);
        }
      }
      lists.set(key, { items, hasMore: page.has_more, loading: false });
    } catch (e) {
      const current = lists.get(key);
      if (current) lists.set(key, { ...current, loading: false });
      throw e;
    } finally {
      this.changed();
    }
  }

  /**
   * Opens a conversation: the server marks its messages read and resets
   * its unread counts. Also reads the members' read positions when the
   * server has them.
   */
  async open(conversationId: string): Promise<Conversation> {
    const conversation = await this.client.request<Conversation>(
      "GET",
      `/v1/conversations/${encodeURIComponent(conversationId)}`,
    );
    this.applyConversation(conversation);
    this.changed();
    if (this.features.readReceipts !== false) {
      this.loadReads(conversationId).catch(() => undefined);
    }
    return conversation;
  }

  /** Moves the caller's read position (to `messageId`, else the latest), or opens the conversation on servers without read positions. */
  async markRead(conversationId: string, messageId?: string): Promise<void> {
    if (this.features.readReceipts !== false) {
      try {
        await this.client.request("POST", `/v1/conversations/${encodeURIComponent(conversationId)}/read`, {
          body: messageId ? { message_id: messageId } : undefined,
        });
        this.features = { ...this.features, readReceipts: true };
        const c = this.conversations.get(conversationId);
        if (c && !messageId) this.applyConversation({ ...c, unread_count: 0, unread_mention_count: 0 });
        this.changed();
        return;
      } catch (e) {
        if (!(e instanceof ConfabError && (e.status === 404 || e.status === 405))) throw e;
        this.features = { ...this.features, readReceipts: false };
      }
    }
    await this.open(conversationId);
  }

  /** Reads the members' read positions of a conversation (servers with read receipts). */
  async loadReads(conversationId: string): Promise<void> {
    try {
      const page = await this.client.request<Page<ReadPosition>>(
        "GET",
        `/v1/conversations/${encodeURIComponent(conversationId)}/reads`,
        { query: { limit: 100 } },
      );
      const positions = new Map<string, ReadPosition>();
      for (const p of page.data) {
        const id = p.contact?.id;
        if (id) positions.set(id, p);
        if (p.contact && "username" in p.contact) this.noteContact(p.contact);
      }
      this.reads.set(conversationId, positions);
      this.features = { ...this.features, readReceipts: true };
    } catch (e) {
      if (e instanceof ConfabError && (e.status === 404 || e.status === 405) && this.conversations.has(conversationId)) {
        this.features = { ...this.features, readReceipts: false };
      } else {
        throw e;
      }
    } finally {
      this.changed();
    }
  }

  /** Fetches a contact not held yet (a direct conversation's peer). */
  ensureContact(id: string): Promise<void> {
    if (this.contacts.has(id)) return Promise.resolve();
    let pending = this.pendingContacts.get(id);
    if (!pending) {
      pending = this.client
        .contact(id)
        .then((c) => {
          this.noteContact(c);
          this.changed();
        })
        .catch(() => undefined)
        .finally(() => this.pendingContacts.delete(id));
      this.pendingContacts.set(id, pending);
    }
    return pending;
  }

  /** Fetches a group not held yet (a group conversation's name). */
  ensureGroup(id: string): Promise<void> {
    if (this.groups.has(id)) return Promise.resolve();
    let pending = this.pendingGroups.get(id);
    if (!pending) {
      pending = this.client
        .request<Group>("GET", `/v1/groups/${encodeURIComponent(id)}`)
        .then((g) => {
          this.applyGroup(g);
          this.changed();
        })
        .catch(() => undefined)
        .finally(() => this.pendingGroups.delete(id));
      this.pendingGroups.set(id, pending);
    }
    return pending;
  }

  // --- keeping the list right -------------------------------------------------

  /** Reads the conversations again soon (debounced). */
  scheduleSync(delay = 300): void {
    if (this.stopped) return;
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      this.sync().catch(() => this.scheduleSync(2_000));
    }, delay);
  }

  /**
   * Reads the loaded range of conversations from the server and adopts it,
   * but only a snapshot that no event raced: none applied while it was
   * read, and none committed after the last one applied (asked with
   * `GET /v1/events?after=`). Otherwise an event might count twice or not
   * at all; it tries again, and keeps what it has meanwhile.
   */
  async sync(): Promise<void> {
    if (this.syncing) {
      this.syncAgain = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      try {
        do {
          this.syncAgain = false;
          await this.syncOnce();
        } while (this.syncAgain && !this.stopped);
      } finally {
        this.syncing = null;
      }
    })();
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    const want = Math.max(PAGE, this.conversations.size);
    for (let attempt = 0; attempt < 6 && !this.stopped; attempt++) {
      const before = this.storedEvents;
      const lastId = this.subscription?.lastEventId;
      const items: Conversation[] = [];
      let hasMore = true;
      let after: string | undefined;
      while (hasMore && items.length < want) {
        const page = await this.client.request<Page<Conversation>>("GET", "/v1/conversations", {
          query: { limit: Math.min(100, want - items.length), starting_after: after },
        });
        items.push(...page.data);
        hasMore = page.has_more;
        after = page.data.at(-1)?.id;
        if (!after) break;
      }
      const quiet = before === this.storedEvents && (await this.nothingAfter(lastId)) && before === this.storedEvents;
      const lastChance = attempt === 5 && !this.ready;
      if (quiet || lastChance) {
        const related = this.adopt(items, hasMore);
        // The first load resolves with names to show (peers, groups).
        if (!this.ready) await related;
        if (!quiet) this.scheduleSync(1_000);
        return;
      }
      await sleep(50 * 2 ** attempt);
    }
    if (!this.stopped) this.scheduleSync(1_000);
  }

  /** Whether no event is committed after `lastId` (so none is still on its way). */
  private async nothingAfter(lastId: string | undefined): Promise<boolean> {
    if (!lastId) {
      // No resume point yet: give a racing event time to arrive.
      const before = this.storedEvents;
      await sleep(150);
      return before === this.storedEvents;
    }
    try {
      const page = await this.client.request<Page<unknown>>("GET", "/v1/events", {
        query: { after: lastId, limit: 1 },
        headers: { Accept: "application/json" },
      });
      return page.data.length === 0;
    } catch {
      return false;
    }
  }

  private adopt(items: Conversation[], hasMore: boolean): Promise<unknown> {
    this.conversations.clear();
    this.touched.clear();
    this.touches += items.length;
    items.forEach((c, i) => {
      this.conversations.set(c.id, c);
      this.touched.set(c.id, this.touches - i);
    });
    this.sorted = null;
    this.hasMoreConversations = hasMore;
    this.changed();
    return Promise.all(items.map((c) => this.fetchRelated(c)));
  }

  private fetchRelated(c: Conversation): Promise<void> {
    const pending: Promise<void>[] = [];
    if (c.contact_id && !this.contacts.has(c.contact_id)) pending.push(this.ensureContact(c.contact_id));
    if (c.group_id && !this.groups.has(c.group_id)) pending.push(this.ensureGroup(c.group_id));
    return Promise.all(pending).then(() => undefined);
  }

  // --- applying events ------------------------------------------------------

  private onEvent(event: StreamEvent): void {
    if (event.type !== "typing") this.storedEvents++;
    switch (event.type) {
      case "typing":
        if (event.payload.contact_id !== this.me?.id) this.typing.apply(event.payload);
        break;
      case "message.created":
      case "message.updated":
        if (!isDeleted(event.payload)) this.applyMessage(event.payload, event.type === "message.created");
        break;
      case "message.deleted":
        this.removeMessage(event.payload.id, true);
        break;
      case "conversation.created":
      case "conversation.updated":
        if (!isDeleted(event.payload)) this.applyConversation(event.payload);
        break;
      case "conversation.deleted":
        this.removeConversation(event.payload.id);
        break;
      case "conversation.read":
        this.applyRead(event.payload);
        break;
      case "group.created":
      case "group.updated":
        if (!isDeleted(event.payload)) this.applyGroup(event.payload);
        break;
      case "group.deleted":
        this.removeGroup(event.payload.id);
        break;
      case "contact.created":
      case "contact.updated":
        this.noteContact(event.payload);
        break;
      case "attachment.created":
      case "attachment.updated":
        if (!isDeleted(event.payload)) this.applyAttachment(event.payload);
        break;
      case "attachment.deleted":
        this.removeAttachment(event.payload.id);
        break;
      case "presence.changed":
        this.applyPresence(event.payload);
        break;
      default:
        break;
    }
    this.changed();
  }

  /**
   * A message as the server now has it. `created`: it is new (its event,
   * or the answer to the caller's send), so it moves its conversation's
   * activity and, from others, the caller's unread counts, once.
   */
  applyMessage(m: Message, created = false): void {
    this.noteContact(m.contact as Contact);
    if (created && !this.counted.has(m.id)) {
      this.counted.add(m.id);
      const c = this.conversations.get(m.conversation_id);
      if (c) {
        const fromOther = m.contact.id !== this.me?.id;
        const mentioned = fromOther && !!this.me && (m.mentions ?? []).includes(this.me.id);
        this.touched.set(c.id, ++this.touches);
        this.setConversation({
          ...c,
          last_active_at: Math.max(c.last_active_at ?? 0, m.created_at),
          unread_count: c.unread_count + (fromOther ? 1 : 0),
          unread_mention_count: c.unread_mention_count + (mentioned ? 1 : 0),
        });
      } else if (this.ready) {
        // A conversation not held (not loaded, or its creation missed).
        this.scheduleSync();
      }
      if (m.parent_id) {
        this.updateLoaded(m.parent_id, (p) => ({
          ...p,
          reply_count: p.reply_count + 1,
          last_reply_at: Math.max(p.last_reply_at ?? 0, m.created_at),
        }));
      }
      this.typing.sent(m.conversation_id, m.contact.id);
    }
    const lists = m.parent_id ? this.threads : this.messages;
    const key = m.parent_id ?? m.conversation_id;
    const list = lists.get(key);
    if (list) {
      const i = list.items.findIndex((x) => x.id === m.id);
      if (i >= 0) {
        if (changedAt(m) >= changedAt(list.items[i])) {
          const items = [...list.items];
          items[i] = m;
          lists.set(key, { ...list, items });
        }
      } else if (created) {
        const items = [...list.items];
        insertArrival(items, m);
        lists.set(key, { ...list, items });
      }
    }
    this.changed();
  }

  /** Takes a deleted message out of the loaded pages (its event, or the caller's own deletion). */
  removeMessage(id: string, fromEvent = false): void {
    let found: Message | undefined;
    for (const lists of [this.messages, this.threads]) {
      for (const [key, list] of lists) {
        const m = list.items.find((x) => x.id === id);
        if (m) {
          found = m;
          lists.set(key, { ...list, items: list.items.filter((x) => x.id !== id) });
        }
      }
    }
    this.threads.delete(id);
    for (const c of this.conversations.values()) {
      if (c.pinned_message_id === id) this.setConversation({ ...c, pinned_message_id: null });
    }
    if (found?.parent_id) {
      this.updateLoaded(found.parent_id, (p) => ({ ...p, reply_count: Math.max(0, p.reply_count - 1) }));
    }
    // A deleted unread message from someone else lowers the unread count,
    // by a number the event does not carry: read it from the server.
    const c = found ? this.conversations.get(found.conversation_id) : undefined;
    const mine = found && found.contact.id === this.me?.id;
    if (fromEvent && !mine && (!found || (c && c.unread_count > 0))) this.scheduleSync();
    this.changed();
  }

  /** A conversation object as the server sent it (the caller's own view). */
  applyConversation(c: Conversation): void {
    this.setConversation(c);
    void this.fetchRelated(c);
    this.changed();
  }

  private setConversation(c: Conversation): void {
    const before = this.conversations.get(c.id);
    if (!before || activity(c) > activity(before)) this.touched.set(c.id, ++this.touches);
    // Merged, not replaced: a group conversation's pin change carries only
    // the attributes every member shares, none of the member's own.
    this.conversations.set(c.id, before ? { ...before, ...c } : c);
    this.sorted = null;
  }

  private removeConversation(id: string): void {
    this.conversations.delete(id);
    this.touched.delete(id);
    this.sorted = null;
    const list = this.messages.get(id);
    for (const m of list?.items ?? []) this.threads.delete(m.id);
    this.messages.delete(id);
    this.typing.forget(id);
    this.reads.delete(id);
  }

  private applyGroup(g: Group): void {
    this.groups.set(g.id, g);
    const members = (g as { contacts?: Contact[] }).contacts ?? [];
    for (const c of members) this.noteContact(c);
    const count = (g as { member_count?: number }).member_count ?? members.length;
    // The whole member list is embedded and the caller is not in it: removed.
    if (this.me && members.length >= count && !members.some((c) => c.id === this.me?.id)) {
      this.removeGroup(g.id);
    }
  }

  private removeGroup(id: string): void {
    this.groups.delete(id);
    for (const c of [...this.conversations.values()]) {
      if (c.group_id === id) this.removeConversation(c.id);
    }
  }

  /** Keeps the newest copy of a contact, and what an older copy had that a newer lacks (presence). */
  private noteContact(c: Contact | undefined): void {
    if (!c || !c.id) return;
    const known = this.contacts.get(c.id);
    const next = known ? { ...known, ...c } : c;
    if ("presence" in c) this.features = { ...this.features, presence: true };
    this.contacts.set(c.id, next);
    if (this.me && c.id === this.me.id) this.me = { ...this.me, ...c };
  }

  private applyAttachment(a: Attachment): void {
    if (!a.message_id) return;
    this.updateLoaded(a.message_id, (m) => {
      const i = m.attachments.findIndex((x) => x.id === a.id);
      const attachments = [...m.attachments];
      if (i >= 0) attachments[i] = a;
      else attachments.push(a);
      return { ...m, attachments };
    });
  }

  private removeAttachment(id: string): void {
    for (const lists of [this.messages, this.threads]) {
      for (const [key, list] of lists) {
        if (!list.items.some((m) => m.attachments.some((a) => a.id === id))) continue;
        const items = list.items.map((m) =>
          m.attachments.some((a) => a.id === id) ? { ...m, attachments: m.attachments.filter((a) => a.id !== id) } : m,
        );
        lists.set(key, { ...list, items });
      }
    }
  }

  /** Applies `change` to every loaded copy of a message. */
  private updateLoaded(id: string, change: (m: Message) => Message): void {
    for (const lists of [this.messages, this.threads]) {
      for (const [key, list] of lists) {
        const i = list.items.findIndex((x) => x.id === id);
        if (i < 0) continue;
        const items = [...list.items];
        items[i] = change(items[i]);
        lists.set(key, { ...list, items });
      }
    }
  }

  private applyPresence(p: PresenceChanged): void {
    const id = p.contact_id ?? p.id;
    if (!id) return;
    const presence =
      p.presence !== undefined
        ? p.presence
        : p.online !== undefined
          ? { online: p.online, last_seen_at: p.last_seen_at ?? null }
          : undefined;
    if (presence === undefined) return;
    const known = this.contacts.get(id);
    if (known) this.contacts.set(id, { ...known, presence });
    this.features = { ...this.features, presence: true };
  }

  private applyRead(p: ConversationRead): void {
    const id = p.contact_id ?? p.contact?.id;
    if (!id) return;
    let positions = this.reads.get(p.conversation_id);
    if (!positions) {
      positions = new Map();
      this.reads.set(p.conversation_id, positions);
    }
    positions.set(id, {
      contact: p.contact ?? this.contacts.get(id) ?? { id },
      last_read_message_id: p.last_read_message_id,
      read_at: p.read_at,
    });
    this.reads.set(p.conversation_id, new Map(positions));
    this.features = { ...this.features, readReceipts: true };
  }

  // --- publishing ---------------------------------------------------------

  private sortedConversations(): Conversation[] {
    if (!this.sorted) {
      const touched = this.touched;
      this.sorted = [...this.conversations.values()].sort(
        (a, b) =>
          activity(b) - activity(a) ||
          (touched.get(b.id) ?? 0) - (touched.get(a.id) ?? 0) ||
          (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
      );
    }
    return this.sorted;
  }

  private changed(): void {
    this.state = null;
    if (this.notifyQueued) return;
    this.notifyQueued = true;
    queueMicrotask(() => {
      this.notifyQueued = false;
      if (this.listeners.size === 0) return;
      const state = this.getState();
      for (const listener of [...this.listeners]) {
        try {
          listener(state);
        } catch (e) {
          console.error("confab: a store listener threw", e);
        }
      }
    });
  }

  private build(): StoreState {
    const conversations = this.sortedConversations();
    const typing = this.typing.snapshot();
    return Object.freeze({
      me: this.me,
      ready: this.ready,
      connection: this.connection,
      conversations,
      hasMoreConversations: this.hasMoreConversations,
      contacts: new Map(this.contacts),
      groups: new Map(this.groups),
      messages: new Map(this.messages) as Map<string, MessageList>,
      threads: new Map(this.threads) as Map<string, MessageList>,
      typing,
      reads: new Map(this.reads),
      features: this.features,
      unreadTotal: conversations.reduce((n, c) => n + c.unread_count, 0),
    });
  }
}
