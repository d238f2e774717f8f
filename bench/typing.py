#!/usr/bin/env python3
"""Typing indicators' reach (docs/api.md "Typing"). Run through bench/typing.sh.

  typing.py run           against running servers: per count in LISTENERS,
                          one group conversation of POSTERS posters and that
                          many listeners, one `GET /v1/events` stream per
                          listener (on STREAM_PORT), the posters'
                          `POST /v1/conversations/:id/typing` (to POST_PORT)
                          for DURATION s; appends one JSON line per count to
                          RESULTS
  typing.py report FILE   the table of FILE's lines; exits 1 when a target
                          fails, 2 when a run broke

What is measured: for every accepted typing POST (204) and every listener
whose stream was open, the delay from the moment just before the POST's
request is written to the socket until that listener's stream has the
matching `event: typing` frame. Sends and receipts are timed by the same
monotonic clock in this one process (one asyncio loop: the posters'
keep-alive connections and the streams, read by asyncio protocols that note
the time as the bytes come in), so the delay includes the client's own
turn-around on a busy loop (at most a few ms for 200 frames of one post).

Each poster posts, on its own schedule (staggered over the posters), a
`start` every PERIOD s (2.5; starts closer than 2 s apart are dropped by
the server) and, with STOPS=1 (default), a `stop` halfway between (a stop
is delivered while the poster's start is unexpired: 8 s). Before the
measured DURATION, each poster posts one `start` (warm-up: its token and
connection warmed, the endpoint checked) whose frames are not counted, and
the measured run begins PERIOD s later.

Matching: a listener's frame (conversation, contact_id, state) belongs to
that poster's latest post of that state sent before the frame arrived
(posts of one poster and state are PERIOD apart, so a frame that is not
more than PERIOD late finds its own post). A post's frame that a listener
did not get within LOSS_WINDOW (1 s) is lost; a frame that matches no post,
or a post already matched on that listener, is extra. Targets: p99 <
MAX_P99_MS (100) and nothing lost, every POST a 204.

Environment: STORE (a label), INSTANCES, POST_PORT, STREAM_PORT, ADMIN_KEY
(a server key, `confab key create`), RESULTS, and the knobs bench/typing.sh
documents. Standard library only.
"""

import asyncio
import bisect
import concurrent.futures
import gc
import http.client
import json
import os
import sys
import time
import urllib.parse

HOST = "127.0.0.1"


def env_float(name, default):
    return float(os.environ.get(name, str(default)))


STORE = os.environ.get("STORE", "?")
INSTANCES = int(os.environ.get("INSTANCES", "1"))
POST_PORT = int(os.environ.get("POST_PORT", "8093"))
STREAM_PORT = int(os.environ.get("STREAM_PORT", str(POST_PORT)))
ADMIN_KEY = os.environ.get("ADMIN_KEY", "")
RESULTS = os.environ.get("RESULTS", "")
LISTENERS = sorted(int(n) for n in os.environ.get("LISTENERS", "50 200").replace(",", " ").split())
POSTERS = int(os.environ.get("POSTERS", "10"))
DURATION = env_float("DURATION", 20)
PERIOD = env_float("PERIOD", 2.5)
STOPS = os.environ.get("STOPS", "1") == "1"
LOSS_WINDOW = env_float("LOSS_WINDOW", 1)
SETTLE = env_float("SETTLE", 1)
MAX_P99_MS = env_float("MAX_P99_MS", 100)
CHUNK = int(os.environ.get("CHUNK", "1000"))
HTTP_TIMEOUT = env_float("HTTP_TIMEOUT", 30)
# The server drops a start closer than 2 s to the poster's previous one: a
# start is never sent sooner than this after the previous one.
MIN_START_GAP = 2.2
# A poster's connection idle this long is replaced before its next POST.
IDLE_RECONNECT = 3.0


def log(msg):
    print(f"[typing {STORE} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def pct(values, p):
    if not values:
        return None
    return values[min(len(values) - 1, int(p * len(values)))]


# ---------------------------------------------------------------- setup (HTTP, blocking)


class Api:
    """One keep-alive connection; JSON in and out."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection(HOST, port, timeout=HTTP_TIMEOUT)

    def call(self, method, path, bearer, body=None, want=(200, 201)):
        headers = {"Authorization": f"Bearer {bearer}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException):
                # An idle keep-alive connection the server closed: once more
                # on a new one (setup requests only, never a timed one).
                self.conn.close()
                if attempt == 2:
                    raise
        if resp.status not in want:
            raise RuntimeError(f"{method} {path}: {resp.status} {raw[:300]!r}")
        return json.loads(raw) if raw else None


def make_contacts(names):
    """Contacts and a token each through the server API (`ADMIN_KEY`):
    [{"name", "id", "token"}] in the order of `names`."""

    def one(name):
        api = Api(POST_PORT)
        contact = api.call("POST", "/v1/admin/contacts", ADMIN_KEY,
                           {"username": name, "phone_number": "+15550100"})
        minted = api.call("POST", f"/v1/admin/contacts/{contact['id']}/tokens", ADMIN_KEY)
        api.conn.close()
        return {"name": name, "id": contact["id"], "token": minted["token"]}

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, names))


def make_conversation(owner, members, name):
    """A group of `owner` and `members` (POST with the first CHUNK - 1, then
    PUT add_contact_ids chunks of CHUNK: a body is at most 64 KiB) and its
    conversation, made by `owner`. Returns the conversation id."""
    api = Api(POST_PORT)
    ids = [m["id"] for m in members]
    group = api.call("POST", "/v1/groups", owner["token"],
                     {"name": name, "contact_ids": ids[: CHUNK - 1]})
    for at in range(CHUNK - 1, len(ids), CHUNK):
        api.call("PUT", f"/v1/groups/{group['id']}", owner["token"],
                 {"add_contact_ids": ids[at: at + CHUNK]})
    conv = api.call("POST", "/v1/conversations", owner["token"], {"group_id": group["id"]})
    api.conn.close()
    return conv["id"]


# ---------------------------------------------------------------- event streams


class Stream(asyncio.Protocol):
    """One `GET /v1/events` stream. Notes the time bytes arrive, decodes the
    chunked body, and keeps each `typing` frame's raw data with that time
    (parsed after the run, to keep the loop's turn short)."""

    def __init__(self, index, token, frames):
        self.index, self.token, self.frames = index, token, frames
        self.ready = asyncio.get_running_loop().create_future()
        self.transport = None
        self.raw = b""  # undecoded bytes (head, chunk framing)
        self.sse = b""  # decoded body, not yet a whole frame
        self.head = False
        self.chunked = False
        self.opened = False
        self.ended = None  # why the stream ended, if it did

    def connection_made(self, transport):
        self.transport = transport
        transport.write((f"GET /v1/events HTTP/1.1\r\nHost: {HOST}\r\n"
                         f"Authorization: Bearer {self.token}\r\n"
                         "Accept: text/event-stream\r\n\r\n").encode())

    def data_received(self, data):
        at = time.monotonic()
        self.raw += data
        if not self.head:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.raw = self.raw[:end].decode("latin-1"), self.raw[end + 4:]
            self.head = True
            lines = head.split("\r\n")
            status = int(lines[0].split()[1])
            for line in lines[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "transfer-encoding" and "chunked" in v.lower():
                    self.chunked = True
            if status != 200:
                self.fail(f"GET /v1/events: {status} {self.raw[:200]!r}")
                return
        if self.chunked:
            while True:
                eol = self.raw.find(b"\r\n")
                if eol < 0:
                    break
                size = int(self.raw[:eol].split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.end("ended by the server")
                    return
                if len(self.raw) < eol + 2 + size + 2:
                    break
                self.sse += self.raw[eol + 2: eol + 2 + size]
                self.raw = self.raw[eol + 2 + size + 2:]
        else:
            self.sse += self.raw
            self.raw = b""
        if b"\r" in self.sse:
            self.sse = self.sse.replace(b"\r\n", b"\n")
        while True:
            cut = self.sse.find(b"\n\n")
            if cut < 0:
                break
            frame, self.sse = self.sse[:cut], self.sse[cut + 2:]
            if not self.opened:
                # The opening (`retry:` and `: connected`): live from here.
                self.opened = True
                if not self.ready.done():
                    self.ready.set_result(None)
                continue
            if b"event: typing" in frame or b"event:typing" in frame:
                self.frames.append((self.index, frame, at))
            elif frame.startswith(b": stream ended"):
                self.ended = frame[2:].decode(errors="replace")

    def fail(self, why):
        self.ended = why
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(why))
        self.transport.close()

    def end(self, why):
        self.ended = self.ended or why
        self.transport.close()

    def connection_lost(self, exc):
        if self.ended is None:
            self.ended = f"closed by the server ({exc!r})" if exc else "closed by the server"
        if not self.ready.done():
            self.ready.set_exception(RuntimeError(self.ended))


def parse_frame(frame):
    """(payload dict, has an id: line) of a raw typing frame."""
    data, has_id = None, False
    for line in frame.split(b"\n"):
        if line.startswith(b"data:"):
            data = line[5:].strip()
        elif line.startswith(b"id:"):
            has_id = True
    return json.loads(data), has_id


# ---------------------------------------------------------------- posters


class Poster:
    """A poster's keep-alive connection for its typing POSTs."""

    def __init__(self, index, contact, conv):
        self.index, self.contact, self.conv = index, contact, conv
        self.r = self.w = None
        self.last_start = -1e9
        self.used = 0.0

    async def connect(self):
        self.r, self.w = await asyncio.wait_for(asyncio.open_connection(HOST, POST_PORT), 10)
        self.used = time.monotonic()

    def close(self):
        if self.w:
            self.w.close()
        self.r = self.w = None

    async def post(self, state):
        """(send time, status, body). The time is taken just before the
        request is written; a broken connection is a status 0."""
        body = urllib.parse.urlencode({"state": state}).encode()
        req = (f"POST /v1/conversations/{self.conv}/typing HTTP/1.1\r\nHost: {HOST}\r\n"
               f"Authorization: Bearer {self.contact['token']}\r\n"
               "Content-Type: application/x-www-form-urlencoded\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        try:
            if self.w is not None and time.monotonic() - self.used > IDLE_RECONNECT:
                # The server may close an idle keep-alive connection (5 s):
                # a new one, before the clock starts.
                self.close()
            if self.w is None:
                await self.connect()
            sent = time.monotonic()
            self.w.write(req)
            status = int((await asyncio.wait_for(self.r.readline(), HTTP_TIMEOUT)).split()[1])
            length, close = 0, False
            while True:
                line = await self.r.readline()
                if line in (b"\r\n", b""):
                    break
                k, _, v = line.decode("latin-1").partition(":")
                k = k.strip().lower()
                if k == "content-length":
                    length = int(v)
                elif k == "connection" and "close" in v.lower():
                    close = True
            raw = await self.r.readexactly(length) if length else b""
            self.used = time.monotonic()
            if close:
                self.close()
            return sent, status, raw
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError,
                IndexError) as e:
            self.close()
            return time.monotonic(), 0, repr(e).encode()


# ---------------------------------------------------------------- one count


async def scenario(n_listeners, posters, listeners):
    everyone = [c for c in posters[1:]] + listeners[:n_listeners]
    conv = make_conversation(posters[0], everyone, f"typing {n_listeners}")
    log(f"{n_listeners} listeners: conversation {conv} with {len(everyone) + 1} members")

    frames = []  # (listener index, raw frame, time)
    loop = asyncio.get_running_loop()
    streams = [None] * n_listeners
    sem = asyncio.Semaphore(50)

    async def open_one(i):
        async with sem:
            _, proto = await asyncio.wait_for(
                loop.create_connection(lambda: Stream(i, listeners[i]["token"], frames),
                                       HOST, STREAM_PORT), 10)
            streams[i] = proto
            await asyncio.wait_for(proto.ready, 30)

    t0 = time.monotonic()
    opened = await asyncio.gather(*(open_one(i) for i in range(n_listeners)),
                                  return_exceptions=True)
    bad = [(i, r) for i, r in enumerate(opened) if isinstance(r, BaseException)]
    for i, r in bad[:3]:
        log(f"the stream of {listeners[i]['name']} did not open: {r!r}")
    live = [i for i in range(n_listeners) if not isinstance(opened[i], BaseException)]
    log(f"{len(live)} of {n_listeners} streams open on port {STREAM_PORT} in "
        f"{time.monotonic() - t0:.1f} s")
    await asyncio.sleep(SETTLE)

    ps = [Poster(k, p, conv) for k, p in enumerate(posters)]
    for p in ps:
        await p.connect()
    # Warm-up: one start each (tokens, connections and the endpoint), not counted.
    warm_errors = []
    for p in ps:
        sent, status, raw = await p.post("start")
        p.last_start = sent
        if status != 204:
            warm_errors.append((status, raw))
    if warm_errors:
        status, raw = warm_errors[0]
        log(f"warm-up: {len(warm_errors)} of {len(ps)} typing POSTs failed, e.g. "
            f"{status} {raw[:200]!r}" + (" (is the endpoint there?)" if status == 404 else ""))
    if len(warm_errors) == len(ps):
        for p in ps:
            p.close()
        for s in streams:
            if s and s.transport:
                s.transport.close()
        log("every warm-up POST failed: no measured run")
        return analyse(n_listeners, conv, posters, listeners, live, [], [], 0,
                       len(warm_errors), {})

    gc.collect()
    gc.disable()
    start = max(p.last_start for p in ps) + PERIOD + 0.05
    stop_at = start + DURATION
    step = PERIOD / 2 if STOPS else PERIOD
    posts = []  # (poster index, state, send time, status, body)

    async def run_poster(p):
        j = 0
        while True:
            at = start + p.index * step / len(ps) + j * step
            state = "stop" if STOPS and j % 2 else "start"
            j += 1
            if state == "start":
                at = max(at, p.last_start + MIN_START_GAP)
            if at >= stop_at:
                return
            delay = at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            sent, status, raw = await p.post(state)
            if state == "start":
                p.last_start = sent
            posts.append((p.index, state, sent, status, raw))

    try:
        await asyncio.gather(*(run_poster(p) for p in ps))
        # The last frames: LOSS_WINDOW after the last post, and a little more.
        await asyncio.sleep(LOSS_WINDOW + 0.5)
    finally:
        gc.enable()
        ended = {i: s.ended for i, s in enumerate(streams) if s and s.ended}
        for p in ps:
            p.close()
        for s in streams:
            if s and s.transport:
                s.transport.close()
    await asyncio.sleep(0.2)
    return analyse(n_listeners, conv, posters, listeners, live, posts, frames, start,
                   len(warm_errors), ended)


def analyse(n_listeners, conv, posters, listeners, live, posts, frames, start, warm_errors,
            ended):
    poster_of = {p["id"]: k for k, p in enumerate(posters)}
    ok = [(k, state, sent) for k, state, sent, status, _ in posts if status == 204]
    errors = [(status, raw) for _, _, _, status, raw in posts if status != 204]
    if errors:
        log(f"{len(errors)} typing POSTs failed, e.g. {errors[0][0]} {errors[0][1][:200]!r}")
    sends = {}  # (poster, state) -> sorted send times
    for k, state, sent in ok:
        sends.setdefault((k, state), []).append(sent)
    for v in sends.values():
        v.sort()

    matched = {}  # (listener, poster, state, post number) -> delay (s)
    extra = with_id = other = 0
    for i, raw, at in frames:
        if at < start:
            continue  # the warm-up's
        try:
            payload, has_id = parse_frame(raw)
        except (ValueError, TypeError):
            extra += 1
            continue
        if not isinstance(payload, dict):
            extra += 1
            continue
        with_id += has_id
        if payload.get("conversation_id") != conv:
            other += 1
            continue
        k = poster_of.get(payload.get("contact_id"))
        state = payload.get("state")
        times = sends.get((k, state), [])
        n = bisect.bisect_right(times, at) - 1
        key = (i, k, state, n)
        if n < 0 or key in matched:
            extra += 1
            continue
        matched[key] = at - times[n]

    delays, lost, late = [], 0, 0
    lost_by = {}
    for (k, state), times in sends.items():
        for n in range(len(times)):
            for i in live:
                d = matched.get((i, k, state, n))
                if d is None or d > LOSS_WINDOW:
                    lost += 1
                    late += d is not None
                    lost_by[i] = lost_by.get(i, 0) + 1
                else:
                    delays.append(d * 1000)
    # A stream that never opened missed every frame too.
    missing = n_listeners - len(live)
    lost += missing * len(ok)
    for i, count in sorted(lost_by.items(), key=lambda x: -x[1])[:5]:
        log(f"{listeners[i]['name']} lost {count} of {len(ok)} frames; "
            f"stream {ended.get(i, 'still open at the end')}")
    if with_id:
        log(f"{with_id} typing frames had an id: line (docs/api.md, 'Typing': never stored or replayed)")
    if other:
        log(f"{other} typing frames of another conversation")
    delays.sort()
    res = dict(store=STORE, instances=INSTANCES, listeners=n_listeners, streams=len(live),
               posters=len(posters), duration=DURATION, posts=len(ok), stops=STOPS,
               post_errors=len(errors) + warm_errors, expected=len(ok) * n_listeners,
               delivered=len(delays), p50=pct(delays, 0.50), p99=pct(delays, 0.99),
               max=delays[-1] if delays else None, lost=lost, late=late, extra=extra,
               with_id=with_id)
    log(f"{n_listeners} listeners: {len(ok)} posts, {len(delays)} of {res['expected']} "
        f"frames, p50 {fmt(res['p50'])} ms, p99 {fmt(res['p99'])} ms, max {fmt(res['max'])} "
        f"ms, lost {lost} ({late} late), extra {extra}")
    return res


async def run_all():
    if not ADMIN_KEY:
        raise RuntimeError("ADMIN_KEY (a server key) is not set")
    most = LISTENERS[-1]
    t0 = time.monotonic()
    posters = make_contacts([f"typ_p{k:03d}" for k in range(POSTERS)])
    listeners = make_contacts([f"typ_l{k:05d}" for k in range(most)])
    log(f"{POSTERS} posters and {most} listeners with tokens in {time.monotonic() - t0:.1f} s")
    for n in LISTENERS:
        try:
            res = await scenario(n, posters, listeners)
        except Exception as e:  # noqa: BLE001 - a row that says so, then the next count
            log(f"{n} listeners: the run broke: {e!r}")
            res = dict(store=STORE, instances=INSTANCES, listeners=n, broken=str(e)[:200])
        write(res)


def write(res):
    if RESULTS:
        with open(RESULTS, "a") as f:
            f.write(json.dumps(res) + "\n")


# ---------------------------------------------------------------- the report


def fmt(v, d=1):
    return "n/a" if v is None else f"{v:.{d}f}"


def report(path):
    """The table of the results in `path`; the exit status."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    out = [f"Typing reach (docs/api.md, 'Typing'): delay from a typing POST to its `typing` frame on each "
           f"other member's stream; targets p99 < {MAX_P99_MS:g} ms, nothing lost within "
           f"{LOSS_WINDOW:g} s.", "",
           "| store | instances | listeners | posts | frames | p50 ms | p99 ms | max ms "
           "| lost | extra | verdict |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    failed, broken = [], False
    for r in rows:
        name = f"{r['store']} {r.get('listeners', '?')}"
        if "broken" in r:
            broken = True
            failed.append(f"{name}: the run broke ({r['broken']})")
            out.append(f"| {r['store']} | {r.get('instances', '?')} | {r.get('listeners', '?')} "
                       f"| | | | | | | | BROKEN |")
            continue
        why = []
        if r["p99"] is None or r["p99"] >= MAX_P99_MS:
            why.append(f"p99 {fmt(r['p99'])} ms")
        if r["lost"]:
            why.append(f"{r['lost']} lost")
        if r["post_errors"]:
            why.append(f"{r['post_errors']} POST errors")
        if not r["posts"]:
            why.append("no posts")
        if why:
            failed.append(f"{name}: " + ", ".join(why))
        inst = "2 (POST A, streams B)" if r["instances"] == 2 else str(r["instances"])
        out.append(f"| {r['store']} | {inst} | {r['listeners']} | {r['posts']} | "
                   f"{r['delivered']}/{r['expected']} | {fmt(r['p50'])} | {fmt(r['p99'])} | "
                   f"{fmt(r['max'])} | {r['lost']} | {r['extra']} | "
                   f"{'FAIL' if why else 'PASS'} |")
    if not rows:
        failed.append("no results")
        broken = True
    out.append("")
    out += [f"FAIL {f}" for f in failed] or ["all scenarios PASS"]
    print("\n".join(out), flush=True)
    return 2 if broken else (1 if failed else 0)


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "run":
        try:
            asyncio.run(run_all())
        except Exception as e:  # noqa: BLE001 - report it and stop this store's run
            log(f"the run broke: {e!r}")
            write(dict(store=STORE, instances=INSTANCES, listeners="-", broken=str(e)[:200]))
            sys.exit(2)
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        sys.exit(report(sys.argv[2]))
    else:
        sys.exit("usage: typing.py run | typing.py report RESULTS (through bench/typing.sh)")


if __name__ == "__main__":
    main()
