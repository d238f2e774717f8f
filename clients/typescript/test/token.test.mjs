// Token expiry against a live server. The server must answer an expired
// token with 401 `token_expired` (a wrong one is `unauthorized`): only
// then may a client refresh. Short-lived tokens come from the CLI
// (`token issue --expires-in 2s`), so nothing waits a minute.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Confab, ConfabError } from "../dist/index.js";
import { ConfabServer, waitFor } from "./support/confab.mjs";

/** How this server answers an expired token: its 401 `code`. */
async function expiredCode(server, username) {
  const token = await server.token(username, "1s");
  const r = await waitFor(
    async () => {
      const r = await server.api(token, "GET", "/v1/contacts/me");
      return r.status === 401 ? r : null;
    },
    { timeout: 15_000, what: "the token to expire" },
  );
  return r.body.code;
}

test("an expired token is refreshed with getToken, requests and the stream carry on", { timeout: 90_000 }, async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");

  // The server tells an expired token from a wrong one: only then may a
  // client refresh.
  assert.equal(await expiredCode(server, "alice"), "token_expired");

  // getToken hands out short tokens first, then a lasting one.
  const reasons = [];
  const handed = [];
  const client = new Confab({
    url: server.url,
    transport: "header",
    getToken: async ({ reason }) => {
      reasons.push(reason);
      const token = await server.token("alice", reasons.length <= 1 ? "3s" : undefined);
      handed.push(token);
      return token;
    },
  });
  t.after(() => client.close());

  const got = [];
  let state = "";
  client.events((e) => e.type === "message.created" && got.push(e.payload.message), {
    onStateChange: (s) => (state = s),
  });
  await waitFor(() => state === "open", { what: "the stream to open" });
  const conversation = (await server.api(bob.token, "POST", "/v1/conversations", { contact_id: alice.id })).body;
  const send = (text) => server.api(bob.token, "POST", "/v1/messages", { conversation_id: conversation.id, message: text });
  await send("before expiry");

  // Past the expiry (the server refuses it from that instant) the
  // next request answers token_expired; the SDK refreshes and retries.
  await waitFor(async () => (await server.api(handed[0], "GET", "/v1/contacts/me")).status === 401, {
    timeout: 15_000,
    what: "the first token to expire",
  });
  const me = await client.me();
  assert.equal(me.id, alice.id);
  assert.deepEqual(reasons, ["initial", "expired"]);

  // The stream the expired token opened ends; the SDK reconnects with the
  // new token and resumes, nothing lost.
  await send("after expiry");
  await waitFor(() => got.length === 3 || got.length === 2, { timeout: 20_000, what: "messages on the stream" });
  await waitFor(() => got.includes("after expiry"), { timeout: 20_000, what: "the message after expiry" });
  assert.deepEqual(got.filter((m) => m !== undefined), ["before expiry", "after expiry"]);
  assert.equal(reasons.filter((r) => r === "expired").length, 1, "one refresh served the requests and the stream");
});

test("a wrong token is not refreshed: 401 unauthorized surfaces once", async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  let calls = 0;
  const client = new Confab({
    url: server.url,
    getToken: () => (calls++, "cfb_" + "0".repeat(64)),
  });
  await assert.rejects(client.me(), (e) => e instanceof ConfabError && e.status === 401 && e.code === "unauthorized");
  assert.equal(calls, 1);
  // The stream gives up too, and says why.
  const error = await new Promise((resolve) => client.events(() => {}, { onError: resolve }));
  assert.equal(error.code, "unauthorized");
  assert.equal(calls, 1);
});
