// Serves the built web client at /app/ and passes every other path to a
// confab server, on one origin (as `confab serve` will with the files
// embedded): no CORS needed. Streams (SSE) and uploads pass through as
// they come.
//
//   node test/serve.mjs --confab http://127.0.0.1:8080 [--port 8081]
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, request } from "node:http";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".png": "image/png",
};

/** `confab`: the server to pass other paths to; null serves the files alone. */
export function serve({ confab, port = 0, dist = join(here, "..", "dist") }) {
  const target = confab ? new URL(confab) : null;
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, "http://x");
    if (url.pathname === "/app") {
      res.writeHead(308, { Location: "/app/" }).end();
      return;
    }
    if (url.pathname.startsWith("/app/")) {
      const rel = normalize(decodeURIComponent(url.pathname.slice(5)) || "index.html");
      if (rel.startsWith("..")) return res.writeHead(404).end();
      const file = join(dist, rel);
      try {
        if (!(await stat(file)).isFile()) throw new Error("not a file");
      } catch {
        return res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
      }
      res.writeHead(200, {
        "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
      });
      createReadStream(file).pipe(res);
      return;
    }
    if (!target) return res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
    // Everything else is confab's; the Host header is kept so that the
    // signed file links confab makes point back here.
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502, { "Content-Type": "application/json" });
      res.end('{"type":"api_error","code":"unavailable","message":"confab is not reachable","param":null}');
    });
    req.pipe(upstream);
  });
  return new Promise((resolve) =>
    server.listen(port, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ server, url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) });
    }),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const get = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const { url } = await serve({ confab: get("--confab", "http://127.0.0.1:8080"), port: Number(get("--port", "8081")) });
  console.log(`web client at ${url}/app/ (confab behind it)`);
}
