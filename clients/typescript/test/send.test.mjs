// Sends across a network that fails: the request reaches the server and
// the answer is lost (the connection drops), or never arrives, or a 503
// comes back. The SDK retries with the same Idempotency-Key until it is
// acknowledged, and the server holds each message exactly once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Confab, ConfabError } from "../dist/index.js";
import { FlakyProxy } from "./support/proxy.mjs";
import { ConfabServer, listAll } from "./support/confab.mjs";

test("a send retried across a dropped connection is stored once", { timeout: 60_000 }, async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const proxy = await FlakyProxy.start(server.port);
  t.after(() => proxy.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const client = new Confab({ url: proxy.url, token: alice.token });
  const conversation = await client.directConversation(bob.id);

  const retries = [];
  const onRetry = (e, n) => retries.push(`${e.name}:${n}`);

  // The answer is lost twice after the server stored the message.
  proxy.fail("POST /v1/messages ", "drop-after-forward", 2);
  const first = await client.send(conversation.id, "answer lost twice", { onRetry });
  assert.equal(first.message, "answer lost twice");
  assert.equal(retries.length, 2, `retried twice: ${retries}`);

  // The request never reaches the server, then a 503.
  proxy.fail("POST /v1/messages ", "drop-before-forward", 1);
  proxy.fail("POST /v1/messages ", "503", 1);
  const second = await client.send(conversation.id, "dropped, then 503", { onRetry });
  assert.equal(second.message, "dropped, then 503");
  assert.equal(retries.length, 4);

  // Several at once, each losing its first answer.
  proxy.fail("POST /v1/messages ", "drop-after-forward", 5);
  const many = await Promise.all(
    Array.from({ length: 5 }, (_, i) => client.send(conversation.id, `concurrent ${i}`, { onRetry })),
  );
  assert.equal(new Set(many.map((m) => m.id)).size, 5);

  const posts = proxy.log.filter((l) => l.line.startsWith("POST /v1/messages "));
  assert.equal(posts.filter((l) => l.mode === "drop-after-forward").length, 7, "the server saw the dropped ones");

  const stored = await listAll(server, alice.token, `/v1/messages?conversation_id=${conversation.id}`);
  const texts = stored.map((m) => m.message).sort();
  assert.deepEqual(texts, ["answer lost twice", "concurrent 0", "concurrent 1", "concurrent 2", "concurrent 3", "concurrent 4", "dropped, then 503"]);
  // The answer the SDK returned is the stored message (a replay of the first 201).
  assert.equal(stored.find((m) => m.message === "answer lost twice").id, first.id);
});

test("a send the server refuses (4xx) is not retried", async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const client = new Confab({ url: server.url, token: alice.token });
  let retried = 0;
  await assert.rejects(
    client.send("01900000-0000-7000-8000-000000000000", "nowhere", { onRetry: () => retried++ }),
    (e) => e instanceof ConfabError && e.status === 404 && e.param === "conversation_id",
  );
  assert.equal(retried, 0);
});

test("a send gives up at its timeout when the server stays away", async (t) => {
  const server = await ConfabServer.start();
  const alice = await server.user("alice");
  await server.close();
  const client = new Confab({ url: server.url, token: alice.token });
  const started = Date.now();
  await assert.rejects(client.send("01900000-0000-7000-8000-000000000000", "x", { timeout: 1500 }), (e) => e.name === "ConfabNetworkError");
  assert.ok(Date.now() - started < 5000);
});
