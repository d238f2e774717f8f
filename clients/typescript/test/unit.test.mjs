// The parts that need no server: the SSE parser in any split, and the
// token refresh with a fake fetch (which answers 401 token_expired on cue).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Confab, ConfabError, SseParser } from "../dist/index.js";

function parse(chunks) {
  const out = [];
  const comments = [];
  const retries = [];
  const p = new SseParser({
    onMessage: (m) => out.push(m),
    onComment: (c) => comments.push(c),
    onRetry: (ms) => retries.push(ms),
  });
  for (const c of chunks) p.push(c);
  return { out, comments, retries };
}

test("the SSE parser reads events, comments and retry in any split", () => {
  const text =
    "retry: 1000\n: connected\n\nid: a1\nevent: message.created\ndata: {\"x\":1}\n\n" +
    "event: typing\ndata: {\"t\":2}\n\n: keep-alive\n\nid: a2\r\nevent: m\r\ndata: line1\r\ndata: line2\r\n\r\n";
  const whole = parse([text]);
  assert.deepEqual(whole.out, [
    { id: "a1", event: "message.created", data: '{"x":1}' },
    { id: undefined, event: "typing", data: '{"t":2}' },
    { id: "a2", event: "m", data: "line1\nline2" },
  ]);
  assert.deepEqual(whole.comments, ["connected", "keep-alive"]);
  assert.deepEqual(whole.retries, [1000]);
  // Every split point, CRLF halves included, gives the same.
  for (let i = 1; i < text.length; i++) {
    assert.deepEqual(parse([text.slice(0, i), text.slice(i)]).out, whole.out, `split at ${i}`);
  }
  assert.deepEqual(parse([...text]).out, whole.out, "one character at a time");
});

function fakeServer(expiredTokens) {
  const seen = [];
  const fetch = async (request) => {
    const auth = request.headers.get("Authorization");
    seen.push({ url: request.url, auth, body: request.body ? await request.text() : null });
    if (expiredTokens.has(auth.slice(7))) {
      return new Response(JSON.stringify({ type: "invalid_request", code: "token_expired", message: "expired", param: null }), {
        status: 401,
        headers: { "Content-Type": "application/json" },
      });
    }
    if (auth === "Bearer wrong") {
      return new Response(JSON.stringify({ type: "invalid_request", code: "unauthorized", message: "no", param: null }), {
        status: 401,
      });
    }
    return new Response(JSON.stringify({ id: "me", username: "alice", token: auth }), {
      status: request.method === "POST" ? 201 : 200,
      headers: { "Content-Type": "application/json" },
    });
  };
  return { fetch, seen };
}

test("getToken is called again on 401 token_expired and the request retried once, body and all", async () => {
  const server = fakeServer(new Set(["t1"]));
  const calls = [];
  const tokens = ["t1", "t2"];
  const client = new Confab({
    url: "http://confab.test",
    fetch: server.fetch,
    getToken: (ctx) => {
      calls.push(ctx.reason);
      return tokens.shift();
    },
  });
  const me = await client.me();
  assert.equal(me.token, "Bearer t2");
  assert.deepEqual(calls, ["initial", "expired"]);
  // A POST is retried with the same body.
  const server2 = fakeServer(new Set(["p1"]));
  const poster = new Confab({ url: "http://confab.test", fetch: server2.fetch, getToken: ({ reason }) => (reason === "initial" ? "p1" : "p2") });
  const sent = await poster.request("POST", "/v1/reports", { body: { reason: "spam", contact_id: "x" } });
  assert.equal(sent.token, "Bearer p2");
  assert.equal(server2.seen.length, 2);
  assert.equal(server2.seen[1].body, server2.seen[0].body);
  assert.equal(server2.seen[1].body, '{"reason":"spam","contact_id":"x"}');
  // The typed client (openapi-fetch) goes through the same refresh.
  server.seen.length = 0;
  const { data } = await client.api.GET("/v1/contacts/me");
  assert.equal(data.token, "Bearer t2");
});

test("concurrent requests that see the token expire share one getToken call", async () => {
  const server = fakeServer(new Set(["old"]));
  let calls = 0;
  const client = new Confab({
    url: "http://confab.test",
    fetch: server.fetch,
    getToken: async ({ reason }) => {
      calls++;
      await new Promise((r) => setTimeout(r, 20));
      return reason === "initial" ? "old" : "new";
    },
  });
  const answers = await Promise.all(Array.from({ length: 5 }, () => client.me()));
  assert.ok(answers.every((a) => a.token === "Bearer new"));
  assert.equal(calls, 2, "one initial call and one refresh");
});

test("a wrong (not expired) token is not refreshed: the 401 surfaces as ConfabError", async () => {
  const server = fakeServer(new Set());
  let calls = 0;
  const client = new Confab({ url: "http://confab.test", fetch: server.fetch, getToken: () => (calls++, "wrong") });
  await assert.rejects(client.me(), (e) => e instanceof ConfabError && e.status === 401 && e.code === "unauthorized");
  assert.equal(calls, 1);
});

test("a token that expires again right after the refresh is not retried in a loop", async () => {
  const server = fakeServer(new Set(["a", "b"]));
  const client = new Confab({ url: "http://confab.test", fetch: server.fetch, getToken: ({ reason }) => (reason === "initial" ? "a" : "b") });
  await assert.rejects(client.me(), (e) => e.code === "token_expired");
  assert.equal(server.seen.length, 2, "the request and one retry");
});
