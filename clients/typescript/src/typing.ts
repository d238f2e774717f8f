// Who is typing where: starts held until they expire or stop, a message
// from the typist ending theirs (the server's rule), timers that drop the
// expired ones.
import type { Typing } from "./types.js";

export class TypingBoard {
  private readonly byConversation = new Map<string, Map<string, number>>();
  private timer: ReturnType<typeof setTimeout> | null = null;

  /** `changed` is called whenever the board changes, expiries included. */
  constructor(private readonly changed: () => void) {}

  apply(t: Typing): void {
    let who = this.byConversation.get(t.conversation_id);
    if (t.state === "stop") {
      if (!who?.delete(t.contact_id)) return;
    } else {
      if (!who) {
        who = new Map();
        this.byConversation.set(t.conversation_id, who);
      }
      // `expires_at` is rounded down to a second: hold until its end, within 9 s.
      const now = Date.now();
      who.set(t.contact_id, Math.min(now + 9_000, Math.max(now + 1_000, (t.expires_at + 1) * 1000)));
    }
    this.prune();
  }

  /** A message from `contactId` ends their typing there. */
  sent(conversationId: string, contactId: string): void {
    if (this.byConversation.get(conversationId)?.delete(contactId)) this.prune();
  }

  forget(conversationId: string): void {
    this.byConversation.delete(conversationId);
  }

  snapshot(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [conversation, who] of this.byConversation) out.set(conversation, [...who.keys()]);
    return out;
  }

  /** Drops the expiry timer (a later start sets it again). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private prune(): void {
    const now = Date.now();
    let next = Infinity;
    for (const [conversation, who] of this.byConversation) {
      for (const [contact, until] of who) {
        if (until <= now) who.delete(contact);
        else next = Math.min(next, until);
      }
      if (who.size === 0) this.byConversation.delete(conversation);
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (next !== Infinity) this.timer = setTimeout(() => this.prune(), next - now + 5);
    this.changed();
  }
}
