// The store against the server after a burst: 500 events (sends from two
// contacts into two direct conversations and a group one, mentions,
// thread replies, reactions, deletions, an opening in the middle) while
// alice's store is live. Once the burst is over, the store's
// conversations (order, unread counts, mention counts, activity) and its
// loaded messages are exactly what the server answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Confab } from "../dist/index.js";
import { ConfabServer, eventsAfter, listAll, sleep, waitFor } from "./support/confab.mjs";

const pick = (c) => ({
  id: c.id,
  unread_count: c.unread_count,
  unread_mention_count: c.unread_mention_count,
  last_active_at: c.last_active_at,
  last_opened_at: c.last_opened_at,
  is_muted: c.is_muted,
  pinned_message_id: c.pinned_message_id,
});
const pickMessage = (m) => ({
  id: m.id,
  message: m.message,
  reactions: m.reactions,
  reply_count: m.reply_count,
  read_at: m.read_at,
  attachments: m.attachments.map((a) => a.id),
});

async function pool(jobs, width) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) await jobs[next++]();
    }),
  );
}

test("the store matches the server after a burst of 500 events", { timeout: 180_000 }, async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const carol = await server.user("carol");
  const direct = async (who) =>
    (await server.api(who.token, "POST", "/v1/conversations", { contact_id: alice.id })).body;
  const withBob = await direct(bob);
  const withCarol = await direct(carol);
  const group = (await server.api(bob.token, "POST", "/v1/groups", { name: "trio", contact_ids: [alice.id, carol.id] })).body;
  const inGroup = (await server.api(bob.token, "POST", "/v1/conversations", { group_id: group.id })).body;

  const client = new Confab({ url: server.url, token: alice.token });
  t.after(() => client.close());
  const store = client.store;
  let notifications = 0;
  store.subscribe(() => notifications++);
  await store.start();
  // The first list is the server's, in its order.
  assert.deepEqual(store.getState().conversations.map(pick), (await listAll(server, alice.token, "/v1/conversations")).map(pick));
  await store.loadMessages(inGroup.id);
  await store.loadMessages(withBob.id);

  // Sends through the SDK (retried on 429: the per-contact rate limit is
  // part of a real burst) as bob and carol.
  const bobClient = new Confab({ url: server.url, token: bob.token });
  const carolClient = new Confab({ url: server.url, token: carol.token });
  const firstEvent = (await eventsAfter(server, alice.token)).at(-1).id;
  const jobs = [];
  const sent = [];
  for (let i = 0; i < 420; i++) {
    const [who, conversation] = [
      [bobClient, withBob],
      [carolClient, withCarol],
      [bobClient, inGroup],
      [carolClient, inGroup],
    ][i % 4];
    const mentions = conversation === inGroup && i % 3 === 0 ? [alice.id] : undefined;
    jobs.push(async () => sent.push(await who.send(conversation.id, `burst ${i}`, { mentions })));
  }
  await pool(jobs, 8);
  // Thread replies, reactions, deletions, alice's own sends and an opening.
  const later = [];
  const groupTop = sent.filter((m) => m.conversation_id === inGroup.id).slice(-3);
  for (let i = 0; i < 20; i++) later.push(() => carolClient.send(inGroup.id, `thread ${i}`, { parentId: groupTop[i % 3].id }));
  for (let i = 0; i < 20; i++) later.push(() => bobClient.react(sent.filter((m) => m.conversation_id !== withCarol.id && m.contact.id === bob.id)[i].id, "like"));
  const bobsDirect = sent.filter((m) => m.conversation_id === withBob.id);
  for (let i = 0; i < 10; i++) later.push(() => bobClient.deleteMessage(bobsDirect[bobsDirect.length - 1 - i].id));
  for (let i = 0; i < 20; i++) later.push(() => client.send(withCarol.id, `alice ${i}`));
  later.push(() => store.open(withCarol.id));
  for (let i = 0; i < 9; i++) later.push(() => bobClient.send(withBob.id, `after ${i}`));
  await pool(later, 6);

  const events = await eventsAfter(server, alice.token, firstEvent);
  assert.ok(events.length >= 500, `a burst of at least 500 events (${events.length})`);

  // Quiet: the stream has delivered the server's last event.
  const lastEvent = (await eventsAfter(server, alice.token, events.at(-1).id)).at(-1)?.id ?? events.at(-1).id;
  await waitFor(() => store.getState() && client.store && lastDelivered(client) === lastEvent, {
    timeout: 60_000,
    what: "the stream to deliver the last event",
  });
  await sleep(1_500); // a re-read the deletions scheduled

  // Each conversation exactly as the server has it (unread and mention
  // counts, activity, read state), in its order by the second (within a
  // second the server orders by microseconds; the store, by arrival).
  const sameAsServer = async () => {
    const onServer = await listAll(server, alice.token, "/v1/conversations");
    const byId = new Map(onServer.map((c) => [c.id, pick(c)]));
    const held = store.getState().conversations;
    return {
      held: held.map(pick),
      server: held.map((c) => byId.get(c.id) ?? { missing: c.id }),
      heldActivity: held.map((c) => c.last_active_at),
      serverActivity: onServer.map((c) => c.last_active_at),
    };
  };
  let compared = await sameAsServer();
  await waitFor(
    async () => {
      compared = await sameAsServer();
      return JSON.stringify(compared.held) === JSON.stringify(compared.server);
    },
    { timeout: 15_000, what: "the store's conversations to match" },
  ).catch(() => undefined);
  assert.deepEqual(compared.held, compared.server);
  assert.equal(compared.held.length, 3);
  assert.deepEqual(compared.heldActivity, compared.serverActivity);
  assert.ok(store.getState().unreadTotal > 0);

  for (const conversation of [inGroup, withBob]) {
    const held = store.getState().messages.get(conversation.id).items;
    const onServer = await listAll(server, alice.token, `/v1/messages?conversation_id=${conversation.id}`);
    assert.equal(held.length, onServer.length, "every message sent since the first page was loaded is held");
    // The same messages, each exactly as the server has it...
    const byId = new Map(onServer.map((m) => [m.id, m]));
    assert.deepEqual(
      held.map(pickMessage),
      held.map((m) => (byId.has(m.id) ? pickMessage(byId.get(m.id)) : { missing: m.id })),
      `messages of ${conversation.id}`,
    );
    // ...newest first, second by second as the server orders them (within
    // a second it orders by microseconds, which no client sees: the store
    // keeps the order of arrival there).
    assert.deepEqual(held.map((m) => m.created_at), onServer.map((m) => m.created_at));
  }
  assert.ok(notifications > 0 && notifications < events.length, `notifications batched (${notifications})`);
});

function lastDelivered(client) {
  // The store's own subscription shares the client's one stream.
  return client.store && client["stream"].lastEventId;
}
