// Builds the web client into dist/: one bundled app.js (the SDK included),
// index.html and app.css, all with relative paths so that the files work
// from any prefix (/app/ in the server, a file server, a CDN). index.html
// names each asset with a version (`app.js?v=<first 16 hex digits of its
// SHA-256>`), so that a server may let browsers keep a versioned asset for
// good while index.html itself is revalidated.
//
// The same three files are built into the server binary (served at /app/
// with CONFAB_WEB_APP=true) from crates/http/webapp/, where they are
// committed so that `cargo build` needs no Node. `node build.mjs --embed`
// (npm run embed) refreshes that copy; clients/run.sh fails when it
// differs from a fresh build. The build is deterministic: same sources,
// same pinned esbuild, same bytes.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist");
/** The files the server embeds, and where. */
export const FILES = ["index.html", "app.js", "app.css"];
export const EMBEDDED = join(here, "..", "..", "crates", "http", "webapp");

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await build({
  entryPoints: [join(here, "src/main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  minify: true,
  // No source map: the files are embedded as built, and a map would name
  // the builder's paths.
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
});
await copyFile(join(here, "src", "app.css"), join(out, "app.css"));
const version = async (file) => createHash("sha256").update(await readFile(join(out, file))).digest("hex").slice(0, 16);
let html = await readFile(join(here, "src", "index.html"), "utf8");
for (const asset of ["app.js", "app.css"]) {
  const plain = `"./${asset}"`;
  if (!html.includes(plain)) throw new Error(`src/index.html does not refer to ${plain}`);
  html = html.replace(plain, `"./${asset}?v=${await version(asset)}"`);
}
await writeFile(join(out, "index.html"), html);
console.log(`web: built ${out}`);

if (process.argv.includes("--embed")) {
  await mkdir(EMBEDDED, { recursive: true });
  for (const file of FILES) await copyFile(join(out, file), join(EMBEDDED, file));
  console.log(`web: copied ${FILES.join(", ")} to ${EMBEDDED}`);
}
