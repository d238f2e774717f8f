// DOM helpers: elements built from text (never HTML strings, so no
// message can inject markup), presence and times in words.
import type { Presence, StoreState } from "@confab/client";

export function $(id: string): HTMLElement {
  const node = document.getElementById(id);
  if (!node) throw new Error(`#${id} is missing`);
  return node;
}

export function el(tag: string, attributes: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  for (const child of children) if (child !== "") node.append(child);
  return node;
}

export function formatTime(seconds: number): string {
  const d = new Date(seconds * 1000);
  const today = new Date().toDateString() === d.toDateString();
  return today
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}

/** "online", "last seen 10:42", or "" when the server shows no presence. */
export function presenceText(presence: Presence | null | undefined): string {
  if (!presence) return "";
  if (presence.online) return "online";
  return presence.last_seen_at ? `last seen ${formatTime(presence.last_seen_at)}` : "offline";
}

/** A message's text with its @mentions marked (the caller's own stronger). */
export function renderText(text: string, state: StoreState, mentions: string[]): (Node | string)[] {
  const names = new Map<string, string>();
  for (const id of mentions) {
    const c = state.contacts.get(id);
    if (c) names.set(c.username.toLowerCase(), id);
  }
  const out: (Node | string)[] = [];
  let last = 0;
  for (const match of text.matchAll(/@([A-Za-z0-9_.-]{1,32})/g)) {
    const id = names.get(match[1].toLowerCase());
    if (!id) continue;
    out.push(text.slice(last, match.index));
    const mark = document.createElement("mark");
    mark.className = `mention${id === state.me?.id ? " me" : ""}`;
    mark.textContent = match[0];
    out.push(mark);
    last = match.index! + match[0].length;
  }
  out.push(text.slice(last));
  return out.filter((p) => p !== "");
}
