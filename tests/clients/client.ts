// The TypeScript half of tests/clients/run.sh: openapi-fetch typed by the
// types openapi-typescript generated from the live server's /openapi.json
// (./schema.d.ts, written next to this file by run.sh), acting as alice.
//
// Environment: CONFAB_URL, CONFAB_TOKEN (alice's), BOB_ID, CAROL_ID.
// Prints one line per step and a closing "typescript: N passed, N failed";
// exits 1 if any step failed.
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

const client = createClient<paths>({
  baseUrl: env("CONFAB_URL"),
  headers: { Authorization: `Bearer ${env("CONFAB_TOKEN")}` },
});
const bobId = env("BOB_ID");
const carolId = env("CAROL_ID");

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

const convId = await step("a. POST /v1/conversations {contact_id} -> 201", [], async () => {
  const r = await client.POST("/v1/conversations", { body: { contact_id: bobId } });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(typeof r.data.id === "string" && r.data.id.length > 0, `no id: ${JSON.stringify(r.data)}`);
  expect(r.data.contact_id === bobId, `contact_id ${r.data.contact_id}, want ${bobId}`);
  return r.data.id;
});

const text = "hello from the generated TypeScript client";
const msgId = await step("b. POST /v1/messages -> 201", [convId], async () => {
  const r = await client.POST("/v1/messages", {
    body: { conversation_id: convId!, message: text },
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.message === text, `message ${JSON.stringify(r.data.message)}`);
  expect(r.data.conversation_id === convId, `conversation_id ${r.data.conversation_id}`);
  return r.data.id;
});

await step("c. GET /v1/messages?conversation_id= -> 200 with it", [convId, msgId], async () => {
  const r = await client.GET("/v1/messages", {
    params: { query: { conversation_id: convId! } },
  });
  expectStatus(r, 200);
  expect(r.data, "no body");
  const found = r.data.data.find((m) => m.id === msgId);
  expect(found, `message ${msgId} not in ${JSON.stringify(r.data.data.map((m) => m.id))}`);
  expect(found.message === text, `message ${JSON.stringify(found.message)}`);
  return true;
});

await step("d. PUT /v1/messages/{id} {reactions:{like:[alice]}} -> 200", [msgId], async () => {
  const r = await client.PUT("/v1/messages/{id}", {
    params: { path: { id: msgId! } },
    body: { reactions: { like: ["alice"] } },
  });
  expectStatus(r, 200);
  expect(r.data, "no body");
  const m: Message = r.data;
  const like = m.reactions.find((x) => "like" in x)?.["like"];
  expect(like?.includes("alice"), `reactions ${JSON.stringify(m.reactions)}`);
  return true;
});

await step("e. POST /v1/groups {name, contact_ids:[bob,carol]} -> 201", [], async () => {
  const r = await client.POST("/v1/groups", {
    body: { name: "team", contact_ids: [bobId, carolId] },
  });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(r.data.name === "team", `name ${JSON.stringify(r.data.name)}`);
  // alice (the owner), bob and carol
  expect(r.data.member_count === 3, `member_count ${r.data.member_count}, want 3`);
  const ids = r.data.contacts.map((c) => c.id);
  expect(ids.includes(bobId) && ids.includes(carolId), `contacts ${JSON.stringify(ids)}`);
  return r.data.id;
});

await step("f. PUT /v1/conversations/{id} {} -> 200", [convId], async () => {
  const r = await client.PUT("/v1/conversations/{id}", {
    params: { path: { id: convId! } },
    body: {},
  });
  expectStatus(r, 200);
  expect(r.data, "no body");
  expect(r.data.id === convId, `id ${r.data.id}`);
  return true;
});

await step("g. POST /v1/events/tickets -> 201 {ticket, expires_at}", [], async () => {
  const r = await client.POST("/v1/events/tickets", { body: {} });
  expectStatus(r, 201);
  expect(r.data, "no body");
  expect(/^cft_[0-9a-f]{64}$/.test(r.data.ticket), `ticket ${JSON.stringify(r.data.ticket)}`);
  const now = Date.now() / 1000;
  expect(
    typeof r.data.expires_at === "number" && r.data.expires_at > now,
    `expires_at ${r.data.expires_at}`,
  );
  return true;
});

console.log(`typescript: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
