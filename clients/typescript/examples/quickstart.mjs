// Connect, list conversations, listen, send (retried, never twice) and upload a photo.
//   CONFAB_URL=http://127.0.0.1:8080 CONFAB_TOKEN=cfb_... node examples/quickstart.mjs bob photo.png
import { readFile } from "node:fs/promises";
import { Confab } from "@confab/client";

const [peer = "bob", photoPath] = process.argv.slice(2);
const confab = new Confab({ url: process.env.CONFAB_URL, token: process.env.CONFAB_TOKEN });

await confab.store.start(); // the conversations, then kept current from the event stream
for (const c of confab.store.getState().conversations) {
  console.log(`${confab.store.title(c)}: ${c.unread_count} unread`);
}

confab.events({
  "message.created": ({ payload: m }) => !m.deleted && console.log(`${m.contact.username}: ${m.message || "[photo]"}`),
  typing: ({ payload: t }) => console.log(`${confab.store.contact(t.contact_id)?.username ?? "someone"} ${t.state}s typing`),
});

const chat = await confab.directConversation((await confab.findContact(peer)).id);
const photo = photoPath &&
  (await confab.upload(await readFile(photoPath), {
    filename: photoPath.split("/").pop(),
    onProgress: (p) => console.log(`upload ${Math.round(p.fraction * 100)}%`),
  }));
const sent = await confab.send(chat.id, "Hello from the SDK", { attachments: photo ? [photo] : [] });
console.log(`sent ${sent.id} with ${sent.attachments.length} attachment(s)`);
setTimeout(() => confab.close(), Number(process.env.LISTEN_MS ?? 1000)); // or keep listening
