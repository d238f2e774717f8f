// Compiled (never run) by `npm run typecheck`: the public API's types as
// an app uses them, so that a change of the generated types that breaks
// an app breaks the build instead.
import { Confab, isDeleted, type Message, type StreamEvent } from "../dist/index.js";

declare const client: Confab;

client.events((event: StreamEvent) => {
  switch (event.type) {
    case "message.created":
      if (!isDeleted(event.payload)) {
        const m: Message = event.payload;
        const text: string = m.message;
        const sender: string = m.contact.username;
        void [text, sender, m.attachments[0]?.file_url, m.reply_to, m.parent_id, m.mentions];
      }
      break;
    case "typing": {
      const state: "start" | "stop" = event.payload.state;
      // @ts-expect-error typing frames have no id
      const id: string = event.id;
      void [state, id];
      break;
    }
    case "presence.changed":
      void event.payload.presence?.online;
      break;
    case "conversation.read":
      void event.payload.last_read_message_id;
      break;
    default:
      break;
  }
});

client.events({
  "conversation.updated": (e) => void (isDeleted(e.payload) ? e.payload.id : e.payload.unread_count),
  typing: (e) => void e.payload.expires_at,
});

async function flows(): Promise<void> {
  const upload = await client.upload(new Uint8Array([1]), { filename: "a.bin", onProgress: (p) => void p.fraction });
  const sent = await client.send("c", "hi", { attachments: [upload, upload.id], mentions: ["x"], replyTo: "m" });
  const state = client.store.getState();
  const unread: number = state.conversations[0].unread_count;
  const online: boolean | undefined = state.contacts.get(sent.contact.id)?.presence?.online;
  const typed = await client.api.GET("/v1/conversations/{id}", { params: { path: { id: "c" } } });
  void [unread, online, typed.data?.last_active_at];
}
void flows;
