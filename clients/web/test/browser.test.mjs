// The web client in a real browser (Debian's Chromium, headless, driven by
// playwright-core; nothing downloads a browser): alice and bob, each in a
// browser context of their own, against a live confab that serves the
// client itself (its built-in copy at /app/, CONFAB_WEB_APP=true), so the
// files the binary embeds are the ones tested, under its
// Content-Security-Policy.
// They exchange messages and a photo, see the unread badge, typing, the
// "Seen" mark, a reaction, a thread reply, search, report and block.
// Presence and per-member read positions are checked when the server's
// OpenAPI document has them, and reported as skipped otherwise. A
// screenshot of every step goes to test-output/ (kept by CI).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { ConfabServer } from "../../typescript/test/support/confab.mjs";
import { photo } from "./png.mjs";
import { serve } from "./serve.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const OUT = process.env.CONFAB_WEB_TEST_OUTPUT ?? join(here, "..", "test-output");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const WAIT = 15_000;

/** What the server's document describes: presence on contacts, read positions. */
async function features(url) {
  const doc = await (await fetch(`${url}/openapi.json`)).json();
  const resolve = (s) => (s?.$ref ? doc.components.schemas[s.$ref.split("/").pop()] : s);
  const contact = resolve(doc.paths["/v1/contacts/{id}"]?.get?.responses?.["200"]?.content?.["application/json"]?.schema);
  return {
    presence: !!contact?.properties?.presence,
    reads: !!doc.paths["/v1/conversations/{id}/reads"],
  };
}

test("two users exchange messages and a photo in the web client", { timeout: 240_000 }, async (t) => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium)`);
  await rm(OUT, { recursive: true, force: true });
  await mkdir(OUT, { recursive: true });

  // The binary serves the client: no other server, one origin.
  const server = await ConfabServer.start({ CONFAB_WEB_APP: "true" });
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const web = { url: server.url };
  const has = await features(server.url);

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  t.after(() => browser.close());
  const errors = [];
  const open = async (name) => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 720 } });
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(`${name}: ${e.message}`));
    page.on("console", (m) => m.type() === "error" && !/Failed to load resource/.test(m.text()) && errors.push(`${name}: ${m.text()}`));
    page.setDefaultTimeout(WAIT);
    return page;
  };
  const a = await open("alice");
  const b = await open("bob");
  let shots = 0;
  const shot = async (page, name) => {
    const file = join(OUT, `${String(++shots).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file });
  };
  const signIn = async (page, user) => {
    const loaded = await page.goto(`${web.url}/app/`);
    assert.match(loaded.headers()["content-security-policy"] ?? "", /default-src 'none'/);
    assert.equal(await page.getByLabel("Server URL").inputValue(), web.url, "the page's own origin by default");
    await page.getByLabel("Access token").fill(user.token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText(`Signed in as ${user.username}`).waitFor();
    await page.locator("#connection", { hasText: "Live" }).waitFor();
  };
  const item = (page, name) => page.locator("#conversations button", { hasText: name });
  const composer = (page) => page.getByLabel("Message", { exact: true });

  await t.test("alice signs in with a token and starts a conversation with bob", async () => {
    await signIn(a, alice);
    await a.getByLabel("Start a conversation with").fill("bob");
    await a.keyboard.press("Enter");
    await a.locator("#conversation-title", { hasText: "bob" }).waitFor();
    await shot(a, "alice-starts-conversation");
  });

  await t.test("bob signs in and sees alice's first message as unread", async () => {
    await signIn(b, bob);
    await item(b, "alice").waitFor();
    await composer(a).fill("Hi Bob! A photo is coming.");
    await composer(a).press("Enter");
    await a.locator("#messages .message", { hasText: "A photo is coming" }).waitFor();
    const badge = item(b, "alice").locator(".badge");
    await badge.filter({ hasText: "1" }).waitFor();
    assert.match(await item(b, "alice").getAttribute("aria-label"), /1 unread/);
    await shot(b, "bob-sees-unread-badge");
  });

  await t.test("presence: bob sees alice online", { skip: !has.presence && "the server's contacts carry no presence yet" }, async () => {
    await item(b, "alice").locator(".dot.online").waitFor();
    assert.match(await item(b, "alice").getAttribute("aria-label"), /online/);
    await shot(b, "bob-sees-alice-online");
  });

  await t.test("bob opens the conversation; alice sees it seen", async () => {
    await item(b, "alice").click();
    await b.locator("#messages .message", { hasText: "A photo is coming" }).waitFor();
    await item(b, "alice").locator(".badge").waitFor({ state: "detached" });
    await a.locator("#messages .message.mine .seen").waitFor();
    await shot(a, "alice-sees-seen");
  });

  await t.test("bob sees alice typing", async () => {
    await composer(a).click();
    await a.keyboard.type("Here it is", { delay: 30 });
    await b.locator("#typing", { hasText: "alice is typing" }).waitFor();
    await shot(b, "bob-sees-typing");
  });

  await t.test("alice uploads a photo with progress and sends it; bob sees it", async () => {
    // Record what the progress bar says as the upload goes.
    await a.evaluate(() => {
      const bar = document.getElementById("upload-progress");
      window.progressSeen = [];
      new MutationObserver(() => window.progressSeen.push(bar.getAttribute("aria-valuetext"))).observe(bar, {
        attributes: true,
        attributeFilter: ["aria-valuetext"],
      });
    });
    await a.locator("#composer-file").setInputFiles({ name: "photo.png", mimeType: "image/png", buffer: photo() });
    await a.locator("#pending .chip", { hasText: "photo.png ready" }).waitFor();
    const progress = await a.evaluate(() => window.progressSeen);
    assert.ok(progress.includes("photo.png: 100%"), `the progress bar reached 100%: ${progress}`);
    await shot(a, "alice-photo-uploaded");
    await composer(a).press("Enter");
    const mine = a.locator("#messages .message", { hasText: "Here it is" });
    await mine.locator("img").waitFor();
    const received = b.locator("#messages .message", { hasText: "Here it is" });
    const img = received.locator("img[alt='photo.png']");
    await img.waitFor();
    await b.waitForFunction(
      (el) => el.complete && el.naturalWidth === 240,
      await img.elementHandle(),
    );
    await b.locator("#typing", { hasText: "typing" }).waitFor({ state: "detached" }).catch(() => undefined);
    assert.equal(await b.locator("#typing").textContent(), "", "a send ends the typing");
    await shot(b, "bob-receives-photo");
  });

  await t.test("alice sees her photo seen", async () => {
    await a.locator("#messages .message.mine", { hasText: "Here it is" }).locator(".seen").waitFor();
    await shot(a, "alice-sees-photo-seen");
  });

  await t.test("read positions: alice sees 'Seen by bob'", { skip: !has.reads && "the server has no read positions yet" }, async () => {
    await a.locator("#messages .seen", { hasText: "Seen by bob" }).waitFor();
    await shot(a, "alice-sees-seen-by-bob");
  });

  await t.test("bob reacts and replies in a thread, mentioning alice; alice sees both", async () => {
    const received = b.locator("#messages .message", { hasText: "Here it is" });
    await received.getByRole("button", { name: /^like/ }).click();
    const mine = a.locator("#messages .message", { hasText: "Here it is" });
    await mine.getByRole("button", { name: "like, 1: bob" }).waitFor();
    await received.getByRole("button", { name: "Thread" }).click();
    await b.getByLabel("Reply in the thread").fill("Lovely colours @alice");
    await b.getByLabel("Reply in the thread").press("Enter");
    await b.locator("#thread-messages .message", { hasText: "Lovely colours" }).waitFor();
    await shot(b, "bob-replies-in-thread");
    await mine.getByRole("button", { name: "Thread (1)" }).click();
    const reply = a.locator("#thread-messages .message", { hasText: "Lovely colours" });
    await reply.locator("mark.mention.me", { hasText: "@alice" }).waitFor();
    await shot(a, "alice-sees-reaction-and-thread");
    // The README's picture (docs/web-client.png is a copy of this one).
    await a.screenshot({ path: join(OUT, "web-client.png") });
  });

  await t.test("alice searches her messages", async () => {
    await a.getByLabel("Search messages").fill("photo");
    await a.getByLabel("Search messages").press("Enter");
    await a.locator("#results-list li", { hasText: "A photo is coming" }).waitFor();
    await shot(a, "alice-searches");
    await a.getByRole("button", { name: "Close the results" }).click();
  });

  await t.test("alice edits her first message; bob sees the edit", async () => {
    a.once("dialog", (d) => d.accept("Hi Bob! The photo is here."));
    await a.locator("#messages .message", { hasText: "A photo is coming" }).getByRole("button", { name: "Edit" }).click();
    const edited = b.locator("#messages .message", { hasText: "The photo is here" });
    await edited.getByText("(edited)").waitFor();
    await shot(b, "bob-sees-edit");
  });

  await t.test("alice reports and blocks bob; bob can no longer write", async () => {
    await a.getByRole("button", { name: "Report", exact: true }).first().click();
    await a.getByLabel("Reason").selectOption("spam");
    await a.getByRole("button", { name: "Send the report" }).click();
    await a.locator("#alert", { hasText: "the report was sent" }).waitFor();
    a.once("dialog", (d) => d.accept());
    await a.locator("#block", { hasText: "Block" }).click();
    await a.locator("#block", { hasText: "Unblock" }).waitFor();
    await shot(a, "alice-blocked-bob");
    await composer(b).fill("are you there?");
    await composer(b).press("Enter");
    await b.locator("#alert", { hasText: "blocked" }).waitFor();
    await shot(b, "bob-is-blocked");
  });

  const skipped = [!has.presence && "presence", !has.reads && "read positions"].filter(Boolean);
  await writeFile(
    join(OUT, "README.txt"),
    `Screenshots of the web client's browser test, one per step, in order.\n` +
      (skipped.length ? `Skipped (the server lacks them): ${skipped.join(", ")}.\n` : ""),
  );
  assert.deepEqual(errors, [], "no errors in the pages");
});

test("the web client works from another origin (CORS)", { timeout: 120_000 }, async (t) => {
  assert.ok(existsSync(join(here, "..", "dist", "app.js")), "build the web client first (npm run build)");
  // The files on one origin, confab on another that lists it.
  const files = await serve({ confab: null });
  t.after(() => files.close());
  const server = await ConfabServer.start({ CONFAB_CORS_ORIGINS: files.url });
  t.after(() => server.close());
  const alice = await server.user("alice");
  const bob = await server.user("bob");
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  t.after(() => browser.close());
  const page = await (await browser.newContext({ viewport: { width: 1100, height: 720 } })).newPage();
  page.setDefaultTimeout(WAIT);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));

  await page.goto(`${files.url}/app/?server=${encodeURIComponent(server.url)}`);
  assert.equal(await page.getByLabel("Server URL").inputValue(), server.url);
  await page.getByLabel("Access token").fill(alice.token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#connection", { hasText: "Live" }).waitFor();
  await page.getByLabel("Start a conversation with").fill("bob");
  await page.keyboard.press("Enter");
  await page.locator("#conversation-title", { hasText: "bob" }).waitFor();
  // An upload (XMLHttpRequest, preflighted) and a send with its Idempotency-Key.
  await page.locator("#composer-file").setInputFiles({ name: "photo.png", mimeType: "image/png", buffer: photo() });
  await page.locator("#pending .chip", { hasText: "photo.png ready" }).waitFor();
  await page.getByLabel("Message", { exact: true }).fill("across origins");
  await page.getByLabel("Message", { exact: true }).press("Enter");
  await page.locator("#messages .message.mine img[alt='photo.png']").waitFor();
  // The stream (a ticket in the URL, no preflight) brings bob's answer.
  const conversation = (await server.api(bob.token, "POST", "/v1/conversations", { contact_id: alice.id, distinct: true })).body;
  await server.api(bob.token, "POST", "/v1/messages", { conversation_id: conversation.id, message: "got it" });
  await page.locator("#messages .message", { hasText: "got it" }).waitFor();
  await page.screenshot({ path: join(OUT, "cross-origin.png") });
  assert.deepEqual(errors, []);
});
