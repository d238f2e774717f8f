#!/usr/bin/env bash
# Cost of decoding hostile request attributes, over real HTTP.
#
# Starts the server on a scratch SQLite database, then a second process (a
# small Python client on one keep-alive connection) sends the worst shapes
# of form body, JSON body and query string we know of, each close to the
# 64 KiB body limit (query strings ~48 KB, under the head limit), and prints
# the median and worst milliseconds per request for each shape, with the
# status the server answered. Decoding must cost time linear in the input:
# every shape should answer within a few milliseconds on a release build.
#
# The last line measures what hostile bodies do to everyone else: a GET
# /v1/contacts/me timed while 8 clients each send 3 bodies of the worst shape.
#
# Needs: a build of the binary (default target/release/confab; set CONFAB_BIN
# to time another), python3, curl. Usage: bench/decode.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CONFAB_BIN:-target/release/confab}
PORT=${PORT:-8091}
ROUNDS=${1:-15}
WORK=$(mktemp -d)
export DATABASE_URL=$WORK/bench.db
# Generous limits: this measures decoding, not the rate limiter.
export CONFAB_RATE_LIMIT_PER_SECOND=0 CONFAB_RATE_LIMIT_ANON_PER_SECOND=0

"$BIN" migrate 2>/dev/null
"$BIN" contact create --username alice --phone-number +15550100 >/dev/null
TOKEN=$("$BIN" token issue --username alice)

CONFAB_LISTEN=127.0.0.1:$PORT RUST_LOG=warn "$BIN" serve 2>"$WORK/server.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do curl -s -o /dev/null "127.0.0.1:$PORT/healthz" && break; sleep 0.2; done

PORT=$PORT TOKEN=$TOKEN ROUNDS=$ROUNDS python3 - <<'PY'
import http.client, json, os, statistics, threading, time

PORT = int(os.environ["PORT"]); TOKEN = os.environ["TOKEN"]; ROUNDS = int(os.environ["ROUNDS"])
BODY = 64 * 1024 - 64   # just under the 64 KiB limit
QUERY = 48 * 1000       # a request line under actix's head limit
AUTH = {"Authorization": "Bearer " + TOKEN}
FORM = dict(AUTH, **{"Content-Type": "application/x-www-form-urlencoded"})
JSONCT = dict(AUTH, **{"Content-Type": "application/json"})

def fill(size, item, sep="&"):
    """item(i) repeated with sep until size bytes."""
    out, n, i = [], 0, 0
    while True:
        s = item(i)
        if n + len(s) + len(sep) > size:
            return sep.join(out)
        out.append(s); n += len(s) + len(sep); i += 1

def json_obj(size, item):
    return "{" + fill(size - 2, item, ",") + "}"

form_shapes = {
    "many distinct keys":       lambda n: fill(n, lambda i: f"k{i}=1"),
    "many distinct nested keys": lambda n: fill(n, lambda i: f"reactions[r{i}][]=alice"),
    "percent-encoded nested keys": lambda n: fill(n, lambda i: f"a%5Bk{i}%5D=1"),
    "many list items":          lambda n: fill(n, lambda i: "contact_ids[]=x"),
    "many indices":             lambda n: fill(n, lambda i: f"attachments[{i}][filename]=f"),
    "deep brackets":            lambda n: "a" + "[b]" * ((n - 3) // 3) + "=1",
    "deep encoded brackets":    lambda n: "a" + "%5Bb%5D" * ((n - 3) // 7) + "=1",
    "one long value":           lambda n: "message=" + "a" * (n - 8),
    "long percent-encoded value": lambda n: "message=" + "%C3%A9" * ((n - 8) // 6),
    "same key repeated":        lambda n: fill(n, lambda i: "message=a"),
    "many empty pairs":         lambda n: "&" * n,
}
def make_cases(body, query):
    cases = []
    for name, make in form_shapes.items():
        cases.append(("form  " + name, "POST", "/v1/messages", make(body), FORM))
    cases += [
        ("json  many distinct keys", "POST", "/v1/messages", json_obj(body, lambda i: f'"k{i}":1'), JSONCT),
        ("json  many nested keys", "POST", "/v1/messages",
         '{"reactions":' + json_obj(body - 20, lambda i: f'"r{i}":["a"]') + "}", JSONCT),
        ("json  many list items", "POST", "/v1/messages",
         '{"contact_ids":[' + fill(body - 20, lambda i: '"x"', ",") + "]}", JSONCT),
        ("json  deep arrays", "POST", "/v1/messages",
         '{"a":' + "[" * (body // 2 - 5) + "]" * (body // 2 - 5) + "}", JSONCT),
        ("json  long string", "POST", "/v1/messages", '{"message":"' + "a" * (body - 20) + '"}', JSONCT),
    ]
    for name in ["many distinct keys", "many distinct nested keys", "percent-encoded nested keys",
                 "many list items", "deep brackets", "same key repeated"]:
        cases.append(("query " + name, "GET", "/v1/messages?" + form_shapes[name](query), None, AUTH))
    return cases

def conn():
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)

def once(c, method, path, body, headers):
    t = time.perf_counter()
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse(); data = r.read()
    ms = (time.perf_counter() - t) * 1000
    code = ""
    if r.status >= 400 and data:
        try: code = json.loads(data).get("code", "")
        except ValueError: code = "?"
    return ms, r.status, code, r.getheader("Connection") == "close"

def median_ms(method, path, body, headers):
    c = conn(); times = []
    for _ in range(ROUNDS):
        ms, status, code, closed = once(c, method, path, body, headers)
        times.append(ms)
        if closed: c.close(); c = conn()
    c.close()
    return statistics.median(times), max(times), status, code

# Each shape at full size and at a quarter of it: linear cost means the
# full size takes about 4 times as long (a quadratic one, about 16 times).
print(f"{'shape':40} {'bytes':>6} {'median ms':>10} {'max ms':>8} {'1/4 size':>9} {'ratio':>6}  answer")
worst = (0, None)
for full, quarter in zip(make_cases(BODY, QUERY), make_cases(BODY // 4, QUERY // 4)):
    name, method, path, body, headers = full
    size = len(body) if body is not None else len(path)
    med, top, status, code = median_ms(method, path, body, headers)
    small, _, _, _ = median_ms(*quarter[1:])
    if med > worst[0]: worst = (med, full)
    print(f"{name:40} {size:>6} {med:>10.2f} {top:>8.2f} {small:>9.2f} {med / small:>6.1f}  {status} {code}")

# Collateral: a cheap GET while 8 clients each send 3 bodies of the worst shape.
_, (name, method, path, body, headers) = worst
def hostile():
    for _ in range(3):
        c = conn()
        try: once(c, method, path, body, headers)
        except OSError: pass  # a refused or reset connection is an answer too
        c.close()
threads = [threading.Thread(target=hostile) for _ in range(8)]
c = conn(); once(c, "GET", "/v1/contacts/me", None, AUTH)
for t in threads: t.start()
time.sleep(0.005)
ms, status, _, _ = once(c, "GET", "/v1/contacts/me", None, AUTH)
for t in threads: t.join()
print(f"GET /v1/contacts/me during 8x3 '{name}': {ms:.2f} ms ({status})")
PY
