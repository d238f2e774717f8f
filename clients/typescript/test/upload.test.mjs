// Uploads with progress in Node, attached by id to a send; the quickstart
// example run as a newcomer would run it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { Confab } from "../dist/index.js";
import { ConfabServer, PNG_1X1 } from "./support/confab.mjs";
import { FlakyProxy } from "./support/proxy.mjs";

test("an upload reports progress and is attached by id", async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const client = new Confab({ url: server.url, token: alice.token });
  const conversation = await client.directConversation(bob.id);

  // A photo of 300 KB: several chunks, so progress moves.
  const bytes = Buffer.concat([PNG_1X1, Buffer.alloc(300_000, 7)]);
  const progress = [];
  const upload = await client.upload(bytes, { filename: "photo ü.png", onProgress: (p) => progress.push(p.fraction) });
  assert.equal(upload.filename, "photo ü.png");
  assert.equal(upload.file_type, "image/png", "typed from its bytes");
  assert.equal(upload.file_size, bytes.length);
  assert.equal(upload.message_id, null);
  assert.ok(progress.length >= 4, `progress reported as it went (${progress.length})`);
  assert.equal(progress.at(-1), 1);
  assert.deepEqual([...progress].sort((a, b) => a - b), progress, "never backwards");

  const message = await client.send(conversation.id, "", { attachments: [upload] });
  assert.equal(message.message, "");
  assert.deepEqual(message.attachments.map((a) => a.id), [upload.id]);
  const content = await fetch(message.attachments[0].file_url);
  assert.equal(content.status, 200);
  assert.deepEqual(Buffer.from(await content.arrayBuffer()), bytes);

  // A File (a Blob with a name of its own) needs no filename; Node 18 has
  // no global File, whose shape is a Blob with a name.
  const file = globalThis.File
    ? new File([PNG_1X1], "dot.png", { type: "image/png" })
    : Object.assign(new Blob([PNG_1X1], { type: "image/png" }), { name: "dot.png" });
  const second = await client.upload(file);
  assert.equal(second.filename, "dot.png");
});

test("an upload retried across dropped answers is stored once", { timeout: 60_000 }, async (t) => {
  // Room for one file of this size and not two: a second copy stored by a
  // retry would be refused 413, and the use the server reports is one file.
  const size = 100_000;
  const server = await ConfabServer.start({ CONFAB_UPLOAD_QUOTA_BYTES: String(size + size / 2) });
  t.after(() => server.close());
  const proxy = await FlakyProxy.start(server.port);
  t.after(() => proxy.close());
  const alice = await server.user("alice");
  const bytes = Buffer.concat([PNG_1X1, Buffer.alloc(size - PNG_1X1.length, 7)]);

  // The first two attempts reach the server, which stores the file; their
  // answers are lost on the way back.
  proxy.fail("POST /v1/attachments ", "drop-after-forward", 2);
  const client = new Confab({ url: proxy.url, token: alice.token });
  const upload = await client.upload(bytes, { filename: "retried.png" });
  assert.equal(upload.file_size, size);
  const posts = proxy.log.filter((l) => l.line.startsWith("POST /v1/attachments "));
  assert.deepEqual(
    posts.map((l) => l.mode),
    ["drop-after-forward", "drop-after-forward", "pass"],
    "two lost answers, then the replayed one",
  );

  // Stored once: the contact's use is one file, so another does not fit.
  const direct = new Confab({ url: server.url, token: alice.token });
  await assert.rejects(direct.upload(bytes, { filename: "another.png" }), (e) => {
    assert.equal(e.status, 413);
    assert.equal(e.code, "storage_quota");
    assert.match(e.message, new RegExp(`\\(${size} bytes\\) of`), e.message);
    return true;
  });
  const content = await fetch(upload.file_url);
  assert.equal(content.status, 200);
  assert.deepEqual(Buffer.from(await content.arrayBuffer()), bytes);
});

test("the quickstart example connects, lists, listens, sends and uploads", { timeout: 60_000 }, async (t) => {
  const server = await ConfabServer.start();
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  // Something to list: bob wrote to alice before.
  const c = (await server.api(bob.token, "POST", "/v1/conversations", { contact_id: alice.id })).body;
  await server.api(bob.token, "POST", "/v1/messages", { conversation_id: c.id, message: "hi alice" });

  const dir = await mkdtemp(join(tmpdir(), "confab-example-"));
  const photo = join(dir, "photo.png");
  await writeFile(photo, PNG_1X1);
  const example = new URL("../examples/quickstart.mjs", import.meta.url).pathname;
  const { stdout } = await promisify(execFile)(process.execPath, [example, "bob", photo], {
    env: { ...process.env, CONFAB_URL: server.url, CONFAB_TOKEN: alice.token, LISTEN_MS: "1500" },
    timeout: 30_000,
  });
  assert.match(stdout, /^bob: 1 unread$/m);
  assert.match(stdout, /^upload 100%$/m);
  assert.match(stdout, /^sent [0-9a-f-]{36} with 1 attachment\(s\)$/m);
  assert.match(stdout, /^alice: \[photo\]$|^alice: Hello from the SDK$/m, "its own message came back on the stream");
});
