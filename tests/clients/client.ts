// The TypeScript half of tests/clients/run.sh: openapi-fetch typed by the
// types openapi-typescript generated from the live server's /openapi.json
// (./schema.ts, written next to this file by gen-types.mjs), used as a
// backend and an app would use it: no hand-written types, no body
// serializer, no casts.
//
// As the backend (a server key): create a contact, find it in the contact
// list, mint it a token, create a webhook. As that contact (the minted
// token): start a direct conversation, send (and retry the send with its
// Idempotency-Key), list, react, create a group, update, make an event
// ticket, upload a file, send it attached, list the attachments. Ids read
// from a single object and from a list item are compared as they come.
//
// Environment: CONFAB_URL, CONFAB_SERVER_KEY, BOB_ID, CAROL_ID.
// Prints one line per step and a closing "typescript: N passed, N failed";
// exits 1 if any step failed.
import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Message = components["schemas"]["MessageDto"];

function env(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`typescript: ${name} is not set`);
    process.exit(2);
  }
  return value;
}

const baseUrl = env("CONFAB_URL");
const backend = createClient<paths>({
  baseUrl,
  headers: { Authorization: `Bearer ${env("CONFAB_SERVER_KEY")}` },
});
const bobId = env("BOB_ID");
const carolId = env("CAROL_ID");
// The app's client, once the backend has minted its token (step A3).
let app = createClient<paths>({ baseUrl });

class StepError extends Error {}

function expect(cond: unknown, what: string): asserts cond {
  if (!cond) throw new StepError(what);
}

// The status, and on a mismatch the answer's body (openapi-fetch puts an
// error answer's parsed JSON in `error`).
function expectStatus(
  r: { response: Response; data?: unknown; error?: unknown },
  want: number,
): void {
  const got = r.response.status;
  if (got !== want) {
    throw new StepError(`status ${got}, want ${want}: ${JSON.stringify(r.error ?? r.data)}`);
  }
}

let passed = 0;
let failed = 0;

// Runs one step; a step whose prerequisite failed is counted as failed
// without being sent.
async function step<T>(
  name: string,
  needs: unknown[],
  body: () => Promise<T>,
): Promise<T | undefined> {
  if (needs.some((n) => n === undefined)) {
    failed++;
    console.log(`typescript: FAIL ${name}: skipped (an earlier step failed)`);
    return undefined;
  }
  try {
    const value = await body();
    passed++;
    console.log(`typescript: ok   ${name}`);
    return value;
  } catch (e) {
    failed++;
    const why = e instanceof StepError ? e.message : String((e as Error)?.stack ?? e);
    console.log(`typescript: FAIL ${name}: ${why}`);
    return undefined;
  }
}

const username = "ts-app";

// --- the backend: /v1/admin with the server key -------------------------------

const contact = await step("A1. POST /v1/admin/contacts -> 201", [], async () => {
  const r = await backend.POST("/v1/admin/contacts", {
    body: { username, phone_number: "+15550199" },
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.username === username, `username ${JSON.stringify(r.data.username)}`);
  return r.data;
});

await step("A2. GET /v1/admin/contacts?username= -> 200, the same id", [contact], async () => {
  const r = await backend.GET("/v1/admin/contacts", { params: { query: { username } } });
  expectStatus(r, 200);
  expect(r.data, "no body");
  expect(r.data.data.length === 1, `${r.data.data.length} contacts named ${username}`);
  expect(r.data.data[0].id === contact!.id, `${r.data.data[0].id} listed, ${contact!.id} made`);
  return true;
});

const token = await step("A3. POST /v1/admin/contacts/{id}/tokens -> 201", [contact], async () => {
  const r = await backend.POST("/v1/admin/contacts/{id}/tokens", {
    params: { path: { id: contact!.id } },
    body: { expires_in: 3600 },
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.contact_id === contact!.id, `contact_id ${r.data.contact_id}`);
  app = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${r.data.token}` } });
  return r.data.token;
});

const webhookId = await step("A4. POST /v1/admin/webhooks -> 201 with its secret", [], async () => {
  const r = await backend.POST("/v1/admin/webhooks", {
    // Nothing listens there: deliveries fail and are retried, which this
    // run does not look at.
    body: { url: "http://127.0.0.1:9/confab-hook", events: ["message.created"] },
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.secret, "no signing secret in the answer to its creation");
  expect(
    JSON.stringify(r.data.events) === '["message.created"]',
    `events ${JSON.stringify(r.data.events)}`,
  );
  return r.data.id;
});

// --- the app: the contact's own token ------------------------------------------

const convId = await step(
  "a. POST /v1/conversations {contact_id, distinct} -> 201",
  [token],
  async () => {
    const r = await app.POST("/v1/conversations", {
      body: { contact_id: bobId, distinct: true },
    });
    expectStatus(r, 201);
    expect(r.data, "no body");
    expect(r.data.contact_id === bobId, `contact_id ${r.data.contact_id}, want ${bobId}`);
    return r.data.id;
  },
);

const text = "hello from the generated TypeScript client";
const sent = await step(
  "b. POST /v1/messages, retried with its Idempotency-Key -> 201 once",
  [convId],
  async () => {
    const request = {
      params: { header: { "Idempotency-Key": randomUUID() } },
      body: { conversation_id: convId!, message: text },
    };
    const r = await app.POST("/v1/messages", request);
    expectStatus(r, 201);
    expect(r.data, "no body");
    expect(r.data.message === text, `message ${JSON.stringify(r.data.message)}`);
    expect(r.data.conversation_id === convId, `conversation_id ${r.data.conversation_id}`);
    // A retry (a lost answer) with the same key: the first answer again.
    const retry = await app.POST("/v1/messages", request);
    expectStatus(retry, 201);
    const replayed = retry.response.headers.get("Idempotent-Replayed");
    expect(replayed === "true", `Idempotent-Replayed ${replayed}`);
    expect(retry.data?.id === r.data.id, `the retry made ${retry.data?.id}`);
    return r.data;
  },
);

await step(
  "c. GET /v1/messages?conversation_id= -> 200, sent.id === page.data[0].id",
  [sent],
  async () => {
    const r = await app.GET("/v1/messages", { params: { query: { conversation_id: convId! } } });
    expectStatus(r, 200);
    expect(r.data, "no body");
    expect(r.data.data.length === 1, `${r.data.data.length} messages, want 1 (no duplicate)`);
    const listed: Message = r.data.data[0];
    expect(listed.id === sent!.id, `${listed.id} listed, ${sent!.id} sent`);
    expect(listed.message === text, `message ${JSON.stringify(listed.message)}`);
    return true;
  },
);

await step("d. PUT /v1/messages/{id} {reactions:{like:[me]}} -> 200", [sent], async () => {
  const r = await app.PUT("/v1/messages/{id}", {
    params: { path: { id: sent!.id } },
    body: { reactions: { like: [username] } },
  });
  expectStatus(r, 200);
  expect(r.data, "no body");
  const like = r.data.reactions.find((x) => "like" in x)?.["like"];
  expect(like?.includes(username), `reactions ${JSON.stringify(r.data.reactions)}`);
  return true;
});

await step("e. POST /v1/groups {name, contact_ids:[bob,carol]} -> 201", [token], async () => {
  const r = await app.POST("/v1/groups", {
    body: { name: "team", contact_ids: [bobId, carolId] },
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.name === "team", `name ${JSON.stringify(r.data.name)}`);
  // the owner, bob and carol
  expect(r.data.member_count === 3, `member_count ${r.data.member_count}, want 3`);
  const ids = r.data.contacts.map((c) => c.id);
  expect(ids.includes(bobId) && ids.includes(carolId), `contacts ${JSON.stringify(ids)}`);
  return r.data.id;
});

await step("f. PUT /v1/conversations/{id} {} -> 200", [convId], async () => {
  const r = await app.PUT("/v1/conversations/{id}", {
    params: { path: { id: convId! } },
    body: {},
  });
  expectStatus(r, 200);
  expect(r.data, "no body");
  expect(r.data.id === convId, `id ${r.data.id}`);
  return true;
});

await step("g. POST /v1/events/tickets -> 201 {ticket, expires_at}", [token], async () => {
  // No body: a ticket takes no parameters.
  const r = await app.POST("/v1/events/tickets");
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(/^cft_[0-9a-f]{64}$/.test(r.data.ticket), `ticket ${JSON.stringify(r.data.ticket)}`);
  expect(r.data.expires_at > Date.now() / 1000, `expires_at ${r.data.expires_at}`);
  return true;
});

const file = "a file uploaded by the generated TypeScript client\n";
const upload = await step("h. POST /v1/attachments (multipart: file) -> 201", [token], async () => {
  // The generated type of a multipart body is FormData, which openapi-fetch
  // sends as it is (fetch writes the boundary).
  const form = new FormData();
  form.append("file", new Blob([file], { type: "text/plain" }), "notes.txt");
  const r = await app.POST("/v1/attachments", {
    params: { header: { "Idempotency-Key": randomUUID() } },
    body: form,
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.filename === "notes.txt", `filename ${JSON.stringify(r.data.filename)}`);
  expect(r.data.file_size === file.length, `file_size ${r.data.file_size}`);
  expect(r.data.message_id === null, `message_id ${r.data.message_id}`);
  return r.data;
});

const withFile = await step(
  "i. POST /v1/messages {attachments:[{id}]} -> 201 with it",
  [convId, upload],
  async () => {
    const r = await app.POST("/v1/messages", {
      body: { conversation_id: convId!, message: "the notes", attachments: [{ id: upload!.id }] },
    });
    expectStatus(r, 201);
    expect(r.data, "no body");
    const ids = r.data.attachments.map((a) => a.id);
    expect(ids.length === 1 && ids[0] === upload!.id, `attachments ${JSON.stringify(ids)}`);
    return r.data.id;
  },
);

await step(
  "j. GET /v1/attachments?message_id= -> 200, upload.id === page.data[0].id",
  [withFile],
  async () => {
    const r = await app.GET("/v1/attachments", { params: { query: { message_id: withFile! } } });
    expectStatus(r, 200);
    expect(r.data, "no body");
    expect(r.data.data.length === 1, `${r.data.data.length} attachments, want 1`);
    expect(r.data.data[0].id === upload!.id, `${r.data.data[0].id} listed, ${upload!.id} made`);
    expect(r.data.data[0].message_id === withFile, `message_id ${r.data.data[0].message_id}`);
    return true;
  },
);

await step("A5. DELETE /v1/admin/webhooks/{id} -> 204", [webhookId], async () => {
  const r = await backend.DELETE("/v1/admin/webhooks/{id}", {
    params: { path: { id: webhookId! } },
  });
  expectStatus(r, 204);
  return true;
});

console.log(`typescript: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
