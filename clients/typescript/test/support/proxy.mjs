// A TCP proxy between a client and confab that can fail on purpose, per
// request: `drop-after-forward` lets the request reach the server and
// closes the client's connection when the answer comes back (the write
// happened, the client never hears it); `drop-before-forward` closes it
// before the server sees anything; `503` answers for the server. Rules
// match the request line and apply to the next N matching requests.
import { connect, createServer } from "node:net";

export class FlakyProxy {
  static async start(targetPort) {
    const proxy = new FlakyProxy(targetPort);
    await new Promise((ok) => proxy.server.listen(0, "127.0.0.1", ok));
    proxy.port = proxy.server.address().port;
    proxy.url = `http://127.0.0.1:${proxy.port}`;
    return proxy;
  }

  constructor(targetPort) {
    this.rules = [];
    this.log = [];
    this.sockets = new Set();
    this.server = createServer((client) => this.handle(client, targetPort));
  }

  /** The next `count` requests whose request line starts with `prefix` fail as `mode`. */
  fail(prefix, mode, count = 1) {
    this.rules.push({ prefix, mode, count });
  }

  handle(client, targetPort) {
    const upstream = connect(targetPort, "127.0.0.1");
    this.sockets.add(client).add(upstream);
    let dropAnswer = false;
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk) => {
      const text = chunk.toString("latin1");
      const line = /^[A-Z]+ \S+ HTTP\/1\.1/.exec(text)?.[0];
      if (line) {
        const rule = this.rules.find((r) => r.count > 0 && line.startsWith(r.prefix));
        this.log.push({ line, mode: rule?.mode ?? "pass" });
        if (rule) {
          rule.count--;
          if (rule.mode === "drop-before-forward") return close();
          if (rule.mode === "503") {
            const body = '{"type":"api_error","code":"unavailable","message":"injected by the test proxy","param":null}';
            client.end(
              `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
            );
            upstream.destroy();
            return;
          }
          if (rule.mode === "drop-after-forward") dropAnswer = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (dropAnswer) return close();
      client.write(chunk);
    });
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
  }

  async close() {
    for (const s of this.sockets) s.destroy();
    await new Promise((ok) => this.server.close(ok));
  }
}
