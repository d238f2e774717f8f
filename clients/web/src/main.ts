// confab's reference web client: everything it shows comes from the SDK's
// store (kept current from the event stream); everything it does is one
// SDK call. Plain DOM, no framework.
import { Confab, ConfabError, Store, type Attachment, type Conversation, type Message, type StoreState } from "@confab/client";
import { $, el, formatTime, presenceText, renderText } from "./dom.js";

const REACTIONS: [string, string][] = [
  ["like", "👍"],
  ["heart", "❤️"],
  ["laugh", "😂"],
];

let client: Confab | null = null;
let store: Store | null = null;
let current: string | null = null; // the open conversation
let thread: string | null = null; // the open thread's first message
let replyTo: Message | null = null;
let pending: Attachment[] = [];
let reportTarget: { messageId: string } | { contactId: string } | null = null;
let renderQueued = false;
let blocked = new Map<string, boolean>();

// --- sign in --------------------------------------------------------------

function defaultServer(): string {
  const asked = new URLSearchParams(location.search).get("server");
  return asked ?? sessionStorage.getItem("confab.url") ?? location.origin;
}

async function signIn(url: string, token: string): Promise<void> {
  const candidate = new Confab({ url, token });
  await candidate.me(); // a wrong token or URL fails here, with the reason
  client = candidate;
  store = candidate.store;
  sessionStorage.setItem("confab.url", url);
  sessionStorage.setItem("confab.token", token);
  store.subscribe(queueRender);
  $("signin").hidden = true;
  $("app").hidden = false;
  await store.start();
  queueRender();
  ($("new-username") as HTMLInputElement).focus();
}

function signOut(): void {
  client?.close();
  client = null;
  store = null;
  current = null;
  sessionStorage.removeItem("confab.token");
  location.reload();
}

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const url = ($("signin-server") as HTMLInputElement).value.trim().replace(/\/+$/, "");
  const token = ($("signin-token") as HTMLInputElement).value.trim();
  $("signin-error").textContent = "";
  try {
    await signIn(url, token);
  } catch (error) {
    $("signin-error").textContent =
      error instanceof ConfabError && error.status === 401
        ? "That token was not accepted (wrong, expired or revoked)."
        : `Could not sign in: ${(error as Error).message}`;
  }
});
($("signin-server") as HTMLInputElement).value = defaultServer();
$("signout").addEventListener("click", signOut);

// --- errors -------------------------------------------------------------------

function showError(error: unknown): void {
  const alert = $("alert");
  let text = (error as Error)?.message ?? String(error);
  if (error instanceof ConfabError && error.code === "contact_blocked") text = "You cannot write to this contact (blocked).";
  alert.textContent = text;
  alert.hidden = false;
  setTimeout(() => (alert.hidden = true), 6000);
}

function attempt<T>(f: () => Promise<T>): Promise<T | undefined> {
  return f().catch((e) => {
    showError(e);
    return undefined;
  });
}

// --- rendering ------------------------------------------------------------------

function queueRender(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    if (store) render(store.getState());
  });
}

function render(state: StoreState): void {
  $("me").textContent = state.me ? `Signed in as ${Store.nameOf(state.me)}` : "";
  $("connection").textContent =
    state.connection === "open" ? "Live" : state.connection === "closed" ? "Offline" : "Connecting…";
  const total = $("unread-total");
  total.hidden = state.unreadTotal === 0;
  total.textContent = String(state.unreadTotal);
  total.setAttribute("aria-label", `${state.unreadTotal} unread in all`);
  renderConversations(state);
  renderConversation(state);
  renderThread(state);
}

function renderConversations(state: StoreState): void {
  const list = $("conversations");
  const focused = document.activeElement?.getAttribute("data-id");
  list.replaceChildren(
    ...state.conversations.map((c) => {
      const peer = state.contacts.get(c.contact_id ?? "");
      const presence = peer?.presence;
      const name = store!.title(c);
      const label = [name];
      const parts: (Node | string)[] = [];
      if (presence) {
        parts.push(el("span", { class: `dot${presence.online ? " online" : ""}`, "aria-hidden": "true" }));
        label.push(presence.online ? "online" : "offline");
      }
      parts.push(el("span", { class: "name" }, name));
      if (c.unread_mention_count > 0) {
        parts.push(el("span", { class: "badge mention", "aria-hidden": "true" }, "@"));
        label.push(`${c.unread_mention_count} mentioning you`);
      }
      if (c.unread_count > 0) {
        parts.push(el("span", { class: "badge", "aria-hidden": "true" }, String(c.unread_count)));
        label.push(`${c.unread_count} unread`);
      }
      if (c.is_muted) label.push("muted");
      const button = el(
        "button",
        {
          type: "button",
          "data-id": c.id,
          "aria-current": String(c.id === current),
          "aria-label": label.join(", "),
        },
        ...parts,
      );
      button.addEventListener("click", () => openConversation(c.id));
      return el("li", {}, button);
    }),
  );
  if (focused) (list.querySelector(`[data-id="${focused}"]`) as HTMLElement | null)?.focus();
  $("more-conversations").hidden = !state.hasMoreConversations;
}

function renderConversation(state: StoreState): void {
  const conversation = current ? state.conversations.find((c) => c.id === current) : undefined;
  $("composer").hidden = !conversation;
  if (!conversation) {
    $("conversation-title").textContent = "Pick a conversation";
    $("messages").replaceChildren();
    $("typing").textContent = "";
    $("peer-presence").textContent = "";
    $("block").hidden = $("report-contact").hidden = true;
    $("older").hidden = true;
    return;
  }
  $("conversation-title").textContent = store!.title(conversation);
  const peer = state.contacts.get(conversation.contact_id ?? "");
  $("peer-presence").textContent = presenceText(peer?.presence);
  const direct = !!conversation.contact_id;
  $("block").hidden = $("report-contact").hidden = !direct;
  $("block").textContent = blocked.get(conversation.contact_id ?? "") ? "Unblock" : "Block";

  const list = state.messages.get(conversation.id);
  $("older").hidden = !list?.hasMore || list.items.length === 0;
  const items = [...(list?.items ?? [])].reverse(); // oldest first on screen
  renderMessages($("messages"), items, state, conversation, false);

  const typing = (state.typing.get(conversation.id) ?? []).map((id) => Store.nameOf(state.contacts.get(id)) || "Someone");
  $("typing").textContent =
    typing.length === 0 ? "" : typing.length === 1 ? `${typing[0]} is typing…` : `${typing.join(", ")} are typing…`;

  // New messages in the open conversation, seen while the page is visible: read.
  if (conversation.unread_count > 0 && document.visibilityState === "visible") markReadSoon(conversation.id);
}

/** The messages of a list, keyed by id: only changed ones are rebuilt (focus and scroll stay). */
function renderMessages(
  container: HTMLElement,
  items: Message[],
  state: StoreState,
  conversation: Conversation,
  inThread: boolean,
): void {
  const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 40;
  const existing = new Map<string, HTMLElement>();
  for (const child of [...container.children] as HTMLElement[]) existing.set(child.dataset.id ?? "", child);
  const seenBy = seenMarkers(items, state, conversation);
  const nodes = items.map((m) => {
    const key = `${m.updated_at}|${m.reply_count}|${m.read_at}|${m.attachments.length}|${seenBy.get(m.id) ?? ""}|${
      state.features.presence
    }`;
    const old = existing.get(m.id);
    if (old && old.dataset.key === key) return old;
    const node = messageNode(m, state, inThread, seenBy.get(m.id));
    node.dataset.key = key;
    return node;
  });
  const same = nodes.length === container.children.length && nodes.every((n, i) => container.children[i] === n);
  if (!same) {
    const focused = document.activeElement;
    container.replaceChildren(...nodes);
    if (focused instanceof HTMLElement && container.contains(focused)) focused.focus();
    if (atBottom || container.dataset.fresh !== "no") {
      container.scrollTop = container.scrollHeight;
      container.dataset.fresh = "no";
    }
  }
}

/**
 * "Seen" under the caller's latest message that others read: from the
 * members' read positions where the server has them, else from the
 * message's own `read_at` (set when the other member of a direct
 * conversation opened it).
 */
function seenMarkers(items: Message[], state: StoreState, conversation: Conversation): Map<string, string> {
  const marks = new Map<string, string>();
  const me = state.me?.id;
  const positions = state.reads.get(conversation.id);
  if (positions && positions.size > 0) {
    for (const [contactId, p] of positions) {
      if (contactId === me || !p.last_read_message_id) continue;
      const name = Store.nameOf(state.contacts.get(contactId)) || "someone";
      const prev = marks.get(p.last_read_message_id);
      marks.set(p.last_read_message_id, prev ? `${prev}, ${name}` : name);
    }
    for (const [id, names] of marks) marks.set(id, `Seen by ${names}`);
    return marks;
  }
  const lastRead = [...items].reverse().find((m) => m.contact.id === me && m.read_at !== null);
  if (lastRead) marks.set(lastRead.id, `Seen ${formatTime(lastRead.read_at!)}`);
  return marks;
}

function messageNode(m: Message, state: StoreState, inThread: boolean, seen: string | undefined): HTMLElement {
  const me = state.me;
  const mine = m.contact.id === me?.id;
  const sender = Store.nameOf(state.contacts.get(m.contact.id) ?? m.contact);
  const node = el("li", { class: `message${mine ? " mine" : ""}`, "data-id": m.id, tabindex: "-1" });
  node.append(
    el(
      "div",
      { class: "meta" },
      el("span", { class: "sender" }, sender),
      el("time", { datetime: new Date(m.created_at * 1000).toISOString() }, formatTime(m.created_at)),
      m.edited_at ? el("span", {}, "(edited)") : "",
    ),
  );
  if (m.reply_to) {
    const q = m.reply_to as { deleted?: boolean; contact?: { username: string }; message?: string };
    node.append(
      el(
        "blockquote",
        { class: "quote" },
        q.deleted ? "A deleted message" : `${q.contact?.username ?? ""}: ${q.message ?? ""}`,
      ),
    );
  }
  if (m.message) node.append(el("p", { class: "text" }, ...renderText(m.message, state, m.mentions ?? [])));
  for (const a of m.attachments) {
    if (a.file_type.startsWith("image/")) {
      node.append(el("img", { src: a.file_url, alt: a.filename, loading: "lazy" }));
    } else {
      node.append(el("a", { href: a.file_url, download: a.filename, rel: "noopener" }, `📎 ${a.filename}`));
    }
  }
  const tools = el("div", { class: "tools" });
  for (const [name, emoji] of REACTIONS) {
    const who = (m.reactions.find((r) => name in r) as Record<string, string[]> | undefined)?.[name] ?? [];
    const pressed = !!me && who.includes(me.username);
    const b = el(
      "button",
      {
        type: "button",
        "aria-pressed": String(pressed),
        "aria-label": `${name}${who.length ? `, ${who.length}: ${who.join(", ")}` : ""}`,
      },
      who.length ? `${emoji} ${who.length}` : emoji,
    );
    b.addEventListener("click", () =>
      attempt(() => (pressed ? client!.unreact(m.id, name) : client!.react(m.id, name))),
    );
    tools.append(b);
  }
  const reply = el("button", { type: "button" }, "Reply");
  reply.addEventListener("click", () => startReply(m));
  tools.append(reply);
  if (!inThread && !m.parent_id) {
    const t = el("button", { type: "button" }, m.reply_count ? `Thread (${m.reply_count})` : "Thread");
    t.addEventListener("click", () => openThread(m.id));
    tools.append(t);
  }
  if (mine && m.message) {
    const edit = el("button", { type: "button" }, "Edit");
    edit.addEventListener("click", () => {
      const text = prompt("Edit your message", m.message);
      if (text !== null && text.trim() && text !== m.message) void attempt(() => client!.edit(m.id, text));
    });
    tools.append(edit);
  }
  if (mine) {
    const d = el("button", { type: "button" }, "Delete");
    d.addEventListener("click", () => {
      if (confirm("Delete this message for everyone?")) void attempt(() => client!.deleteMessage(m.id));
    });
    tools.append(d);
  } else {
    const r = el("button", { type: "button" }, "Report");
    r.addEventListener("click", () => openReport({ messageId: m.id }));
    tools.append(r);
  }
  node.append(tools);
  if (seen) node.append(el("p", { class: "seen" }, seen));
  return node;
}

function renderThread(state: StoreState): void {
  const aside = $("thread");
  if (!thread) {
    aside.hidden = true;
    return;
  }
  aside.hidden = false;
  const conversation = state.conversations.find((c) => c.id === current);
  const parent = state.messages.get(current ?? "")?.items.find((m) => m.id === thread);
  const replies = [...(state.threads.get(thread)?.items ?? [])].reverse();
  if (!conversation) return;
  renderMessages($("thread-messages"), parent ? [parent, ...replies] : replies, state, conversation, true);
}

// --- actions --------------------------------------------------------------------

async function openConversation(id: string): Promise<void> {
  if (!store || !client) return;
  current = id;
  thread = null;
  replyTo = null;
  $("messages").dataset.fresh = "yes";
  $("replying").hidden = true;
  queueRender();
  await attempt(() => store!.loadMessages(id));
  await attempt(() => store!.open(id));
  const c = store.conversation(id);
  if (c?.contact_id && !blocked.has(c.contact_id)) {
    const peer = c.contact_id;
    client.isBlocked(peer).then((b) => {
      blocked.set(peer, b);
      queueRender();
    }, () => undefined);
  }
  ($("composer-text") as HTMLTextAreaElement).focus();
}

let readTimer: ReturnType<typeof setTimeout> | null = null;
function markReadSoon(id: string): void {
  if (readTimer) return;
  readTimer = setTimeout(() => {
    readTimer = null;
    if (current === id) void attempt(() => store!.markRead(id));
  }, 300);
}

function startReply(m: Message): void {
  replyTo = m;
  $("replying").hidden = false;
  $("replying-text").textContent = `Replying to ${Store.nameOf(m.contact)}: ${m.message.slice(0, 80)}`;
  ($("composer-text") as HTMLTextAreaElement).focus();
}

$("replying-cancel").addEventListener("click", () => {
  replyTo = null;
  $("replying").hidden = true;
});

async function openThread(id: string): Promise<void> {
  thread = id;
  $("results").hidden = true;
  queueRender();
  await attempt(() => store!.loadThread(id));
  ($("thread-text") as HTMLTextAreaElement).focus();
}

$("thread-close").addEventListener("click", () => {
  thread = null;
  queueRender();
});

/** The ids of the members named with @username in a text. */
function mentionsIn(text: string, conversation: Conversation): string[] {
  const state = store!.getState();
  const members = conversation.group_id
    ? ((state.groups.get(conversation.group_id) as { contacts?: { id: string; username: string }[] } | undefined)
        ?.contacts ?? [])
    : [state.contacts.get(conversation.contact_id ?? ""), state.me].filter((c) => !!c);
  const ids = new Set<string>();
  for (const match of text.matchAll(/@([A-Za-z0-9_.-]{1,32})/g)) {
    const who = members.find((c) => c!.username.toLowerCase() === match[1].toLowerCase());
    if (who) ids.add(who.id);
  }
  return [...ids];
}

async function send(text: string, parentId?: string): Promise<boolean> {
  const conversation = current ? store!.conversation(current) : undefined;
  if (!conversation) return false;
  const attachments = parentId ? [] : pending;
  if (!text.trim() && attachments.length === 0) return false;
  const sent = await attempt(() =>
    client!.send(conversation.id, text, {
      attachments,
      replyTo: parentId ? undefined : replyTo?.id,
      parentId,
      mentions: mentionsIn(text, conversation),
    }),
  );
  if (!sent) return false;
  if (!parentId) {
    pending = [];
    replyTo = null;
    $("replying").hidden = true;
    renderPending();
  }
  return true;
}

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const box = $("composer-text") as HTMLTextAreaElement;
  const text = box.value;
  box.value = "";
  if (!(await send(text))) box.value = text;
});

$("thread-composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const box = $("thread-text") as HTMLTextAreaElement;
  const text = box.value;
  box.value = "";
  if (!thread || !(await send(text, thread))) box.value = text;
});

for (const [boxId, formId] of [
  ["composer-text", "composer"],
  ["thread-text", "thread-composer"],
]) {
  $(boxId).addEventListener("keydown", (e) => {
    const k = e as KeyboardEvent;
    if (k.key === "Enter" && !k.shiftKey && !k.isComposing) {
      e.preventDefault();
      ($(formId) as HTMLFormElement).requestSubmit();
    }
    if (k.key === "Escape") {
      replyTo = null;
      $("replying").hidden = true;
    }
  });
}

$("composer-text").addEventListener("input", () => {
  const box = $("composer-text") as HTMLTextAreaElement;
  if (!current || !client) return;
  const id = current;
  void client.typing(id, box.value.trim() ? "start" : "stop").catch(() => undefined);
});

$("composer-file").addEventListener("change", async () => {
  const input = $("composer-file") as HTMLInputElement;
  const files = [...(input.files ?? [])];
  input.value = "";
  const bar = $("upload-progress") as HTMLProgressElement;
  for (const file of files) {
    bar.hidden = false;
    bar.value = 0;
    const uploaded = await attempt(() =>
      client!.upload(file, {
        onProgress: (p) => {
          bar.value = p.fraction;
          bar.setAttribute("aria-valuetext", `${file.name}: ${Math.round(p.fraction * 100)}%`);
        },
      }),
    );
    if (uploaded) pending.push(uploaded);
    renderPending();
  }
  bar.hidden = true;
  ($("composer-text") as HTMLTextAreaElement).focus();
});

function renderPending(): void {
  $("pending").replaceChildren(
    ...pending.map((a) => {
      const remove = el("button", { type: "button", "aria-label": `Remove ${a.filename}` }, "×");
      remove.addEventListener("click", () => {
        pending = pending.filter((p) => p.id !== a.id);
        renderPending();
      });
      return el(
        "span",
        { class: "chip", "data-upload": a.id },
        a.file_type.startsWith("image/") ? el("img", { src: a.file_url, alt: a.filename }) : "",
        `${a.filename} ready`,
        remove,
      );
    }),
  );
}

$("more-conversations").addEventListener("click", () => attempt(() => store!.loadMoreConversations()));
$("older").addEventListener("click", () => current && attempt(() => store!.loadMessages(current!)));

$("new-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("new-username") as HTMLInputElement;
  const contact = await attempt(() => client!.findContact(input.value.trim()));
  if (contact === null) return showError(`Nobody is called ${input.value.trim()}.`);
  if (!contact) return;
  const conversation = await attempt(() => client!.directConversation(contact.id));
  if (conversation) {
    input.value = "";
    await openConversation(conversation.id);
  }
});

$("search-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const query = ($("search") as HTMLInputElement).value.trim();
  if (query.length < 3) return showError("Search for at least 3 characters.");
  const page = await attempt(() => client!.search(query, { limit: 30 }));
  if (!page) return;
  thread = null;
  $("results").hidden = false;
  $("results-title").textContent = `${page.data.length}${page.has_more ? "+" : ""} results for “${query}”`;
  $("results-list").replaceChildren(
    ...page.data.map((m) => {
      const b = el(
        "button",
        { type: "button" },
        el("strong", {}, Store.nameOf(m.contact)),
        ` ${formatTime(m.created_at)}: ${m.message}`,
      );
      b.addEventListener("click", () => openConversation(m.conversation_id));
      return el("li", {}, b);
    }),
  );
  queueRender();
  ($("results-list").querySelector("button") as HTMLElement | null)?.focus();
});
$("results-close").addEventListener("click", () => ($("results").hidden = true));

$("block").addEventListener("click", async () => {
  const peer = current ? store!.conversation(current)?.contact_id : null;
  if (!peer) return;
  const isBlocked = blocked.get(peer);
  if (isBlocked) await attempt(() => client!.unblock(peer));
  else if (confirm("Block this contact? They will not be able to write to you.")) await attempt(() => client!.block(peer));
  else return;
  blocked.set(peer, !isBlocked);
  queueRender();
});

function openReport(target: { messageId: string } | { contactId: string }): void {
  reportTarget = target;
  ($("report-description") as HTMLTextAreaElement).value = "";
  ($("report-dialog") as HTMLDialogElement).showModal();
}
$("report-contact").addEventListener("click", () => {
  const peer = current ? store!.conversation(current)?.contact_id : null;
  if (peer) openReport({ contactId: peer });
});
$("report-cancel").addEventListener("click", () => ($("report-dialog") as HTMLDialogElement).close());
$("report-form").addEventListener("submit", async () => {
  const target = reportTarget;
  if (!target) return;
  const reason = ($("report-reason") as HTMLSelectElement).value as "spam";
  const description = ($("report-description") as HTMLTextAreaElement).value.trim() || undefined;
  const done = await attempt(() => client!.report(target, reason, description));
  if (done) {
    const alert = $("alert");
    alert.textContent = "Thank you: the report was sent.";
    alert.hidden = false;
    setTimeout(() => (alert.hidden = true), 4000);
  }
});

document.addEventListener("visibilitychange", queueRender);

// Signed in before in this tab: carry on.
const saved = sessionStorage.getItem("confab.token");
if (saved) {
  signIn(defaultServer(), saved).catch(() => {
    sessionStorage.removeItem("confab.token");
    $("signin").hidden = false;
    $("app").hidden = true;
  });
}
