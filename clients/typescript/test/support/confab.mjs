// A real confab server for a test: the binary named by CONFAB_BIN, on a
// fresh SQLite file in a temporary directory, on a free loopback port;
// users made with the binary's own CLI, as an operator would.
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, readFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export function binary() {
  const bin = process.env.CONFAB_BIN;
  if (!bin) throw new Error("set CONFAB_BIN to the confab binary (e.g. target/debug/confab)");
  return resolve(bin);
}

export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

export async function waitFor(check, { timeout = 15_000, interval = 50, what = "condition" } = {}) {
  const end = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

// Servers still running when a test process ends (a failed assertion, a
// timeout) are killed with it, never left behind.
const running = new Set();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export class ConfabServer {
  static async start(env = {}) {
    const dir = await mkdtemp(join(tmpdir(), "confab-sdk-"));
    const server = new ConfabServer(dir, await freePort(), env);
    await server.spawn();
    return server;
  }

  constructor(dir, port, env) {
    this.dir = dir;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.env = { ...process.env, DATABASE_URL: join(dir, "c.db"), RUST_LOG: "warn", ...env };
    this.child = null;
    this.runs = 0;
  }

  async spawn() {
    this.runs++;
    const { openSync } = await import("node:fs");
    const log = openSync(join(this.dir, `server-${this.runs}.log`), "a");
    this.child = spawn(binary(), ["serve"], {
      env: { ...this.env, CONFAB_LISTEN: `127.0.0.1:${this.port}` },
      stdio: ["ignore", log, log],
    });
    const child = this.child;
    running.add(child);
    let exited = false;
    child.once("exit", () => {
      exited = true;
      running.delete(child);
    });
    await waitFor(
      async () => {
        if (exited) throw new Error(`confab exited at start: ${await this.log()}`);
        try {
          return (await fetch(`${this.url}/readyz`)).status === 200;
        } catch {
          return false;
        }
      },
      { what: "confab /readyz" },
    );
  }

  /** Stops the process: SIGKILL (a crash) or SIGTERM (a graceful stop). */
  async stop(signal = "SIGTERM") {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const done = new Promise((r) => child.once("exit", r));
    child.kill(signal);
    await done;
    this.child = null;
  }

  async restart(signal = "SIGKILL") {
    await this.stop(signal);
    await this.spawn();
  }

  async log() {
    let text = "";
    for (let i = 1; i <= this.runs; i++) {
      text += await readFile(join(this.dir, `server-${i}.log`), "utf8").catch(() => "");
    }
    return text;
  }

  async cli(...args) {
    const { stdout } = await run(binary(), args, { env: this.env });
    return stdout.trim();
  }

  /** A contact and a token for it: { id, username, token }. */
  async user(username, { expiresIn } = {}) {
    const phone = "+1555" + String(Math.floor(Math.random() * 1e7)).padStart(7, "0");
    const contact = JSON.parse(await this.cli("contact", "create", "--username", username, "--phone-number", phone));
    const token = await this.token(username, expiresIn);
    return { id: contact.id, username, token };
  }

  async token(username, expiresIn) {
    const args = ["token", "issue", "--username", username];
    if (expiresIn) args.push("--expires-in", expiresIn);
    return (await this.cli(...args)).split("\n").at(-1);
  }

  /** A plain JSON request with a token (no SDK), for checking what the server holds. */
  async api(token, method, path, body) {
    const response = await fetch(this.url + path, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }

  async close() {
    await this.stop("SIGTERM");
    if (!process.env.CONFAB_TEST_KEEP) await rm(this.dir, { recursive: true, force: true });
    else console.log(`kept ${this.dir}`);
  }
}

/** Every page of a list route, oldest page last. */
export async function listAll(server, token, path) {
  const items = [];
  let after;
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await server.api(token, "GET", `${path}${sep}limit=100${after ? `&starting_after=${after}` : ""}`);
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    items.push(...r.body.data);
    if (!r.body.has_more || r.body.data.length === 0) return items;
    after = r.body.data.at(-1).id;
  }
}

/** Every event of a contact after `after` (the JSON catch-up list). */
export async function eventsAfter(server, token, after) {
  const events = [];
  let cursor = after;
  for (;;) {
    const q = new URLSearchParams({ limit: "100" });
    if (cursor) q.set("after", cursor);
    const r = await fetch(`${server.url}/v1/events?${q}`, {
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
    });
    const body = await r.json();
    if (r.status !== 200) throw new Error(`events: ${r.status} ${JSON.stringify(body)}`);
    events.push(...body.data);
    if (!body.has_more || body.data.length === 0) return events;
    cursor = body.data.at(-1).id;
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The smallest PNG (1x1, red), for uploads. */
export const PNG_1X1 = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc0000003010100c9fe92ef0000000049454e44ae426082",
  "hex",
);
