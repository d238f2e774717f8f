// Builds the web client into dist/: one bundled app.js (the SDK included),
// index.html and app.css, all with relative paths so that the files work
// from any prefix (/app/ in the server, a file server, a CDN).
import { build } from "esbuild";
import { copyFile, mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist");
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await build({
  entryPoints: [join(here, "src/main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  minify: true,
  sourcemap: true,
  legalComments: "none",
  logLevel: "warning",
});
for (const file of ["index.html", "app.css"]) await copyFile(join(here, "src", file), join(out, file));
console.log(`web: built ${out}`);
