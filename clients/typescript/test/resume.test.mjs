// The event stream across server restarts: killed (SIGKILL) and stopped
// (SIGTERM) on the same database, with events written while the client
// was away. Every event is delivered once, in order, none lost: the list
// of delivered ids equals the server's own catch-up list. Both transports:
// Authorization header (Node's default) and an event ticket (browsers').
import assert from "node:assert/strict";
import { test } from "node:test";
import { Confab } from "../dist/index.js";
import { ConfabServer, eventsAfter, waitFor } from "./support/confab.mjs";

test("the stream resumes after the server restarts: no event lost or doubled", { timeout: 120_000 }, async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const conversation = (await server.api(bob.token, "POST", "/v1/conversations", { contact_id: alice.id })).body;

  const clients = {};
  const received = {};
  const states = {};
  for (const transport of ["header", "ticket"]) {
    const client = new Confab({ url: server.url, token: alice.token, transport });
    clients[transport] = client;
    received[transport] = [];
    states[transport] = [];
    client.events((e) => e.id && received[transport].push(e.id), {
      onStateChange: (s) => states[transport].push(s),
    });
    t.after(() => client.close());
  }
  await waitFor(() => Object.values(states).every((s) => s.at(-1) === "open"), { what: "both streams open" });

  let n = 0;
  const send = async (count) => {
    for (let i = 0; i < count; i++) {
      const r = await server.api(bob.token, "POST", "/v1/messages", {
        conversation_id: conversation.id,
        message: `m${++n}`,
      });
      assert.equal(r.status, 201);
    }
  };
  const delivered = (count) =>
    waitFor(() => Object.values(received).every((r) => r.length >= count), {
      timeout: 60_000,
      what: `${count} events on both streams`,
    });

  await send(5);
  await delivered(5);

  // A crash: the connections reset; events are written before the
  // clients are back (their backoff is longer than a send).
  await server.restart("SIGKILL");
  await send(5);
  await delivered(10);

  // A graceful stop: the server ends the streams itself.
  await server.restart("SIGTERM");
  await send(5);
  await delivered(15);
  await send(3);
  await delivered(18);

  const all = await eventsAfter(server, alice.token);
  const first = all.findIndex((e) => e.id === received.header[0]);
  const expected = all.slice(first).map((e) => e.id);
  assert.equal(expected.length, 18);
  for (const transport of Object.keys(received)) {
    assert.deepEqual(received[transport], expected, `${transport}: every event once, in order`);
    assert.ok(states[transport].includes("reconnecting"), `${transport} reconnected`);
  }
});

test("a resume point the server no longer has asks for a resync, then goes live", { timeout: 60_000 }, async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const conversation = (await server.api(bob.token, "POST", "/v1/conversations", { contact_id: alice.id })).body;
  const client = new Confab({
    url: server.url,
    token: alice.token,
    transport: "header",
    resumeFrom: "01900000-0000-7000-8000-000000000000", // never an event here (as if pruned)
  });
  t.after(() => client.close());
  const resyncs = [];
  const got = [];
  let state = "";
  client.events((e) => e.type === "message.created" && got.push(e.payload.message), {
    onResync: (reason) => resyncs.push(reason),
    onStateChange: (s) => (state = s),
  });
  await waitFor(() => state === "open", { what: "the stream to open without the resume point" });
  assert.deepEqual(resyncs, ["expired_cursor"]);
  await server.api(bob.token, "POST", "/v1/messages", { conversation_id: conversation.id, message: "live" });
  await waitFor(() => got.length === 1, { what: "the live message" });
  assert.deepEqual(got, ["live"]);
});
