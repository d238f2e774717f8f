#!/usr/bin/env python3
"""Big groups (docs/api.md "Groups"). Run through bench/groups.sh.

Two steps per store, each its own process (never the server's):

  groups.py seed   before the server starts: contacts and their tokens,
                   set-based SQL (PostgreSQL: generate_series and sha256();
                   SQLite: a recursive CTE, the hash as a Python function)
  groups.py run    against the running server: sets up its groups over HTTP
                   and measures (1) the send rate into a direct conversation
                   and into the conversations of groups of SIZES members,
                   with the membership PUTs' times, (2) the delay from a
                   send's response to its `message.created` on STREAMS open
                   event streams of members of the largest group, and the
                   server's peak RSS, (3) the inbox and the opening of a
                   conversation of a member of INBOX_GROUPS small groups vs
                   one of as many big groups. Prints a table with PASS/FAIL
                   per target, writes it as markdown to GROUPS_MD if set,
                   exits 1 when a target fails (2 when the run broke).

Contacts are numbered 1..N, username `g000001`..., token `cfb_bench_<n>`
(stored as its SHA-256, as `confab token issue` does): 1 the sender (owner
of every group), 2 its peer (the direct conversation), 3 viewer A, 4 viewer
B, 5 and up the pool the groups' members come from (member k of a group of
size S is pool[k] for k < S - 1: the same contacts are in every group).

Environment: STORE (postgres | sqlite), DB (the PostgreSQL database) or
DB_FILE (the SQLite file), PORT, SERVER_PID, RAW (a scratch directory), and
the knobs that bench/groups.sh documents. Standard library only.
"""

import asyncio
import concurrent.futures
import hashlib
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = "127.0.0.1"
STORE = os.environ.get("STORE", "postgres")
DB = os.environ.get("DB", "")
DB_FILE = os.environ.get("DB_FILE", "")
PORT = int(os.environ.get("PORT", "8092"))
PID = int(os.environ.get("SERVER_PID", "0"))
RAW = os.environ.get("RAW", "/tmp")


def env_int(name, default):
    return int(os.environ.get(name, str(default)))


SIZES = sorted(int(s) for s in os.environ.get("SIZES", "100 1000 10000").replace(",", " ").split())
CHUNK = env_int("CHUNK", 1000)
DURATION = env_int("BENCH_DURATION", 10)
WARMUP = env_int("BENCH_WARMUP", 3)
CONNECTIONS = env_int("BENCH_CONNECTIONS", 8)
WRK_THREADS = env_int("WRK_THREADS", 2)
WRK_TIMEOUT = env_int("WRK_TIMEOUT", 10)
STREAMS = env_int("STREAMS", 1000)
EVENT_MESSAGES = env_int("EVENT_MESSAGES", 20)
EVENT_GAP_MS = env_int("EVENT_GAP_MS", 200)
EVENT_TIMEOUT = float(os.environ.get("EVENT_TIMEOUT", "5"))
STREAM_OPEN_TIMEOUT = float(os.environ.get("STREAM_OPEN_TIMEOUT", "120"))
INBOX_GROUPS = env_int("INBOX_GROUPS", 200)
INBOX_SMALL = env_int("INBOX_SMALL", 10)
INBOX_BIG = env_int("INBOX_BIG", max(SIZES))
INBOX_MESSAGES = env_int("INBOX_MESSAGES", 3)
INBOX_LIMIT = env_int("INBOX_LIMIT", 100)
INBOX_SEED = os.environ.get("INBOX_SEED", "http")
SETUP_WORKERS = env_int("SETUP_WORKERS", 4)
HTTP_TIMEOUT = float(os.environ.get("HTTP_TIMEOUT", "120"))
# Targets.
MIN_SEND_RATIO = float(os.environ.get("MIN_SEND_RATIO", "0.66"))
MAX_P99_MS = float(os.environ.get("MAX_P99_MS", "25"))
MAX_PUT_MS = float(os.environ.get("MAX_PUT_MS", "1000"))
MAX_EVENT_P99_MS = float(os.environ.get("MAX_EVENT_P99_MS", "1000"))
MAX_RSS_MB = float(os.environ.get("MAX_RSS_MB", "150"))
MAX_INBOX_SLOWDOWN = float(os.environ.get("MAX_INBOX_SLOWDOWN", "1.2"))

SENDER, PEER, VIEWER_A, VIEWER_B, POOL0 = 1, 2, 3, 4, 5
POOL = max(max(SIZES) - 1, INBOX_BIG - 2, INBOX_SMALL - 2, 1)
TOTAL = POOL0 - 1 + POOL
TEXT = "Hello from the benchmark"


def log(msg):
    print(f"[groups {STORE} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def token(n):
    return f"cfb_bench_{n}"


def now_us():
    return time.time_ns() // 1000


# ---------------------------------------------------------------- the stores


def psql(sql, *args):
    """Runs SQL on the scratch PostgreSQL database; returns stdout."""
    p = subprocess.run(
        ["psql", "-h", HOST, "-U", "postgres", "-d", DB, "-v", "ON_ERROR_STOP=1", "-qAt", *args],
        input=sql, text=True, capture_output=True, timeout=600,
    )
    if p.returncode != 0:
        raise RuntimeError(f"psql failed: {p.stderr.strip()}")
    return p.stdout


def sqlite():
    c = sqlite3.connect(DB_FILE, timeout=30)
    c.create_function("sha256hex", 1, lambda s: hashlib.sha256(s.encode()).hexdigest(),
                      deterministic=True)
    return c


def seed():
    """Contacts 1..TOTAL and one token each: set-based, before the server runs."""
    t = now_us()
    if STORE == "postgres":
        psql(f"""
INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
  SELECT gen_random_uuid(), 'g' || lpad(i::text, 6, '0'), 'g' || lpad(i::text, 6, '0'),
         '+15550100', '', {t}, {t}
  FROM generate_series(1, {TOTAL}) i;
INSERT INTO tokens (id, contact_id, token_hash, created_at)
  SELECT gen_random_uuid(), id,
         encode(sha256(convert_to('cfb_bench_' || substr(username, 2)::int, 'UTF8')), 'hex'), {t}
  FROM contacts WHERE username LIKE 'g______';
ANALYZE;
""")
    else:
        c = sqlite()
        with c:
            c.executescript(f"""
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {TOTAL})
INSERT INTO contacts (id, username, username_folded, phone_number, avatar_url, last_active_at, created_at)
  SELECT lower(printf('%s-%s-4%s-8%s-%s', hex(randomblob(4)), hex(randomblob(2)),
               substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2), hex(randomblob(6)))),
         printf('g%06d', i), printf('g%06d', i), '+15550100', '', {t}, {t}
  FROM s;
INSERT INTO tokens (id, contact_id, token_hash, created_at)
  SELECT lower(printf('%s-%s-4%s-8%s-%s', hex(randomblob(4)), hex(randomblob(2)),
               substr(hex(randomblob(2)), 2), substr(hex(randomblob(2)), 2), hex(randomblob(6)))),
         id, sha256hex('cfb_bench_' || CAST(substr(username, 2) AS INTEGER)), {t}
  FROM contacts WHERE username LIKE 'g______';
ANALYZE;
""")
        c.close()
    log(f"seeded {TOTAL} contacts with tokens")


def contact_ids():
    """{n: id} of the seeded contacts."""
    sql = "SELECT username, id FROM contacts WHERE username LIKE 'g______'"
    if STORE == "postgres":
        rows = [line.split("|") for line in psql(sql + ";").split()]
    else:
        c = sqlite()
        rows = c.execute(sql).fetchall()
        c.close()
    ids = {int(u[1:]): str(i) for u, i in rows}
    if len(ids) != TOTAL:
        raise RuntimeError(f"{len(ids)} seeded contacts, expected {TOTAL}")
    return ids


# ---- SQL membership (INBOX_SEED=sql only) ---------------------------------
# The one place that writes group_members by hand: a shortcut for the inbox's
# big groups, whose members over HTTP are INBOX_GROUPS * INBOX_BIG / CHUNK
# PUTs. Columns as of migrations/*/2025-01-01-000000_init: group_id,
# contact_id, role ('owner' | 'member'), seq (join order, the owner 1),
# joined_at (microseconds). The group must have no conversation yet (a
# member's conversation_states row is made when the conversation is), and
# hold only its owner and viewer B (seq 1 and 2). Check it against the
# migrations whenever group_members changes.
def sql_add_pool_members(group_id, count):
    t = now_us()
    first, last = POOL0, POOL0 + count - 1
    sql = f"""
INSERT INTO group_members (group_id, contact_id, role, seq, joined_at)
  SELECT '{group_id}', id, 'member', {{n}} - {POOL0} + 3, {t}
  FROM contacts WHERE username BETWEEN 'g{first:06d}' AND 'g{last:06d}';
UPDATE groups SET member_count = (SELECT COUNT(*) FROM group_members WHERE group_id = '{group_id}')
  WHERE id = '{group_id}';
"""
    if STORE == "postgres":
        psql(sql.format(n="substr(username, 2)::int"))
    else:
        c = sqlite()
        with c:
            c.executescript(sql.format(n="CAST(substr(username, 2) AS INTEGER)"))
        c.close()


# ---------------------------------------------------------------- HTTP setup


class Api:
    """One keep-alive connection; JSON in and out."""

    def __init__(self):
        self.conn = http.client.HTTPConnection(HOST, PORT, timeout=HTTP_TIMEOUT)
        self.used = time.monotonic()

    def call(self, method, path, n, body=None, want=(200, 201)):
        headers = {"Authorization": f"Bearer {token(n)}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        t0 = time.monotonic()
        if t0 - self.used > 1:
            # The server may have closed an idle keep-alive connection: a new one.
            self.conn.close()
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            raise
        self.used = time.monotonic()
        ms = (self.used - t0) * 1000
        if resp.status not in want:
            raise RuntimeError(f"{method} {path}: {resp.status} {raw[:300]!r}")
        return (json.loads(raw) if raw else None), ms


def make_group(api, ids, name, members, owner=SENDER):
    """A group of `owner` and `members` (contact numbers): POST with the
    first CHUNK - 1, then PUT add_contact_ids chunks of CHUNK. Returns the
    group id, the POST's ms and [(count, ms)] of the PUTs."""
    first, rest = members[: CHUNK - 1], members[CHUNK - 1:]
    group, post_ms = api.call("POST", "/v1/groups", owner,
                              {"name": name, "contact_ids": [ids[m] for m in first]})
    gid = group["id"]
    puts = []
    for at in range(0, len(rest), CHUNK):
        chunk = rest[at: at + CHUNK]
        _, ms = api.call("PUT", f"/v1/groups/{gid}", owner,
                         {"add_contact_ids": [ids[m] for m in chunk]})
        puts.append((len(chunk), ms))
    return gid, post_ms, puts


def check_size(api, gid, want):
    """The group has `want` members (`member_count`, else its `contacts`)."""
    group, _ = api.call("GET", f"/v1/groups/{gid}", SENDER)
    have = group.get("member_count", len(group.get("contacts", [])))
    if have != want:
        raise RuntimeError(f"group {gid} has {have} members, expected {want}")


def pool(k):
    """The first k pool members' contact numbers."""
    return list(range(POOL0, POOL0 + k))


# ---------------------------------------------------------------- wrk


def wrk(name, lines, seconds):
    """wrk (bench/wrk.lua) over `lines` (METHOD, PATH, BODY or -, TOKEN) for
    `seconds`: {rps, p50, p99 (ms), failed, requests}."""
    path = os.path.join(RAW, f"targets-{STORE}-{name}.txt")
    with open(path, "w") as f:
        for line in lines:
            f.write("\t".join(line) + "\n")
    cmd = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s",
           "--timeout", f"{WRK_TIMEOUT}s", "-s", os.path.join(HERE, "wrk.lua"),
           f"http://{HOST}:{PORT}"]
    env = dict(os.environ, BENCH_TARGETS=path, BENCH_PER_CONNECTION="0")
    p = subprocess.run(cmd, env=env, text=True, capture_output=True,
                       timeout=seconds + WRK_TIMEOUT + 60)
    with open(os.path.join(RAW, f"wrk-{STORE}-{name}.txt"), "a") as f:
        f.write(p.stdout + p.stderr)
    fields = None
    for line in p.stdout.splitlines():
        if line.startswith("BENCH "):
            fields = dict(kv.split("=") for kv in line.split()[1:])
    if p.returncode != 0 or fields is None:
        raise RuntimeError(f"wrk {name} failed: {p.stdout[-500:]} {p.stderr[-500:]}")
    f = {k: int(v) for k, v in fields.items()}
    failed = f["connect"] + f["read"] + f["write"] + f["status"] + f["timeout"]
    ok = f["requests"] - f["status"]
    return dict(rps=ok / (f["duration_us"] / 1e6), p50=f["p50_us"] / 1000,
                p99=f["p99_us"] / 1000, failed=failed, requests=f["requests"])


def measure(name, lines):
    """A warm-up run (discarded), then the measured run."""
    if WARMUP > 0:
        wrk(name + "-warmup", lines, WARMUP)
    r = wrk(name, lines, DURATION)
    log(f"{name}: {r['rps']:.0f} req/s, p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms, "
        f"failed {r['failed']}")
    return r


def send_line(conv, n=SENDER):
    return ("POST", "/v1/messages", f"conversation_id={conv}&message={TEXT.replace(' ', '+')}",
            token(n))


# ---------------------------------------------------------------- event streams


class Conn:
    """A keep-alive HTTP/1.1 connection over asyncio, for the sends."""

    async def open(self):
        self.r, self.w = await asyncio.wait_for(asyncio.open_connection(HOST, PORT), 10)
        return self

    async def post(self, path, n, body):
        data = json.dumps(body).encode()
        self.w.write(
            (f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token(n)}\r\n"
             f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode()
            + data)
        await self.w.drain()
        status = int((await self.r.readline()).split()[1])
        length = 0
        while True:
            line = await self.r.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                length = int(v)
        raw = await self.r.readexactly(length) if length else b""
        return status, raw


async def open_stream(n):
    """GET /v1/events as contact n, up to its response head."""
    r, w = await asyncio.open_connection(HOST, PORT)
    w.write((f"GET /v1/events HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {token(n)}\r\n"
             "Accept: text/event-stream\r\n\r\n").encode())
    await w.drain()
    status = int((await r.readline()).split()[1])
    chunked = False
    while True:
        line = await r.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
            chunked = True
    if status != 200:
        w.close()
        raise RuntimeError(f"stream of contact {n}: {status}")
    return r, w, chunked


async def read_stream(i, r, chunked, on_event, ends, why):
    """Reads frames until the stream ends; calls on_event(i, message id, time)
    for each message.created; ends[i] says how the stream ended."""
    buf = b""
    ends[i] = "open"
    try:
        while True:
            if chunked:
                size_line = await r.readline()
                if not size_line:
                    ends[i] = why.get(i, "closed by the server")
                    return
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    ends[i] = why.get(i, "ended by the server")
                    return
                data = (await r.readexactly(size + 2))[:-2]
            else:
                data = await r.read(65536)
                if not data:
                    ends[i] = "closed by the server"
                    return
            at = time.monotonic()
            buf += data.replace(b"\r\n", b"\n")
            while b"\n\n" in buf:
                frame, buf = buf.split(b"\n\n", 1)
                kind, payload = None, None
                for line in frame.split(b"\n"):
                    if line.startswith(b"event:"):
                        kind = line[6:].strip()
                    elif line.startswith(b"data:"):
                        payload = line[5:].strip()
                    elif line.startswith(b": stream ended"):
                        why[i] = line[2:].decode(errors="replace")
                if kind == b"message.created" and payload:
                    on_event(i, json.loads(payload)["payload"]["id"], at)
    except (asyncio.IncompleteReadError, ConnectionError, ValueError) as e:
        ends[i] = f"error: {e!r}"[:200]
        return


async def event_reach(conv, members):
    """Opens one stream per member, sends EVENT_MESSAGES into `conv`, and
    measures the delay from each send's response to its event per stream."""
    arrivals = {}  # message id -> {stream: time}

    def on_event(i, mid, at):
        arrivals.setdefault(mid, {}).setdefault(i, at)

    opened = [None] * len(members)
    sem = asyncio.Semaphore(50)

    async def one(i, n):
        async with sem:
            opened[i] = await asyncio.wait_for(open_stream(n), 30)

    t0 = time.monotonic()
    failures = 0
    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(one(i, n) for i, n in enumerate(members)), return_exceptions=True),
            STREAM_OPEN_TIMEOUT)
    except asyncio.TimeoutError:
        log(f"streams still opening after {STREAM_OPEN_TIMEOUT:g} s: going on with those open")
        results = []
    for res in results:
        if isinstance(res, BaseException):
            failures += 1
            if failures <= 3:
                log(f"a stream did not open: {res!r}")
    ends, why = {}, {}
    readers = [asyncio.create_task(read_stream(i, s[0], s[2], on_event, ends, why))
               for i, s in enumerate(opened) if s]
    live = [i for i, s in enumerate(opened) if s]
    log(f"{len(live)} of {len(members)} streams open in {time.monotonic() - t0:.1f} s")
    rss_open = rss_kib("VmRSS")

    sender = await Conn().open()
    sent = {}  # message id -> time of the response
    send_errors = 0
    for k in range(EVENT_MESSAGES):
        try:
            status, raw = await asyncio.wait_for(
                sender.post("/v1/messages", SENDER, {"conversation_id": conv,
                                                     "message": f"reach {k}"}), HTTP_TIMEOUT)
            at = time.monotonic()
            if status == 201:
                sent[json.loads(raw)["id"]] = at
            else:
                send_errors += 1
        except (asyncio.TimeoutError, OSError, ValueError, asyncio.IncompleteReadError):
            send_errors += 1
            sender.w.close()
            sender = await Conn().open()
        await asyncio.sleep(EVENT_GAP_MS / 1000)
    # The last deliveries: until every stream has every message, at most
    # EVENT_TIMEOUT after the last response.
    deadline = max(sent.values(), default=time.monotonic()) + EVENT_TIMEOUT
    while time.monotonic() < deadline:
        if all(len(arrivals.get(m, {})) >= len(live) for m in sent):
            break
        await asyncio.sleep(0.05)
    ended = {i: e for i, e in ends.items() if e != "open"}
    sender.w.close()
    for _, w in ((s[0], s[1]) for s in opened if s):
        w.close()
    for t in readers:
        t.cancel()
    await asyncio.gather(*readers, return_exceptions=True)

    delays, missed_pairs, missing_streams = [], 0, set()
    for mid, t_resp in sent.items():
        got = arrivals.get(mid, {})
        for i in live:
            at = got.get(i)
            if at is None or at - t_resp > EVENT_TIMEOUT:
                missed_pairs += 1
                missing_streams.add(i)
            else:
                delays.append(max(0.0, at - t_resp) * 1000)
    for i in sorted(missing_streams)[:5]:
        log(f"stream of contact {members[i]} missed {len(sent) - sum(1 for m in sent if i in arrivals.get(m, {}))}"
            f" of {len(sent)} events; {ended.get(i, 'still open')}")
    if ended:
        log(f"{len(ended)} streams ended before the end, e.g. {next(iter(ended.values()))}")
    # A stream that never opened missed every event too.
    missing_streams |= set(range(len(members))) - set(live)
    missed_pairs += (len(members) - len(live)) * len(sent)
    delays.sort()
    return dict(streams=len(members), opened=len(live), messages=len(sent),
                send_errors=send_errors, pairs=len(sent) * len(members),
                p50=pct(delays, 0.50), p99=pct(delays, 0.99),
                max=delays[-1] if delays else None, missed_pairs=missed_pairs,
                missed_streams=len(missing_streams), rss_open_mb=rss_open / 1024)


def pct(values, p):
    if not values:
        return None
    return values[min(len(values) - 1, int(p * len(values)))]


def rss_kib(field):
    try:
        with open(f"/proc/{PID}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# ---------------------------------------------------------------- the run


def run():
    ids = contact_ids()
    api = Api()
    res = {"store": STORE}
    checks = []  # (what, ok)

    # 1. Send rate: a direct conversation and one group conversation per size.
    direct, _ = api.call("POST", "/v1/conversations", SENDER, {"contact_id": ids[PEER]})
    convs = [("direct", direct["id"])]
    groups = {}
    puts = []
    for size in SIZES:
        t0 = time.monotonic()
        gid, post_ms, put_times = make_group(api, ids, f"send-{size}", pool(size - 1))
        check_size(api, gid, size)
        conv, _ = api.call("POST", "/v1/conversations", SENDER, {"group_id": gid})
        groups[size] = (gid, conv["id"])
        convs.append((f"group {size}", conv["id"]))
        puts += [(size, n, ms) for n, ms in put_times]
        log(f"group of {size}: POST {post_ms:.0f} ms, {len(put_times)} PUTs "
            f"(max {max((ms for _, ms in put_times), default=0):.0f} ms), "
            f"with its conversation in {time.monotonic() - t0:.1f} s")
    sends = []
    for name, conv in convs:
        r = measure(name.replace(" ", "-"), [send_line(conv)])
        sends.append((name, r))
    base = sends[0][1]["rps"]
    for name, r in sends:
        r["ratio"] = r["rps"] / base if base else 0
        bad = []
        if name != "direct" and r["ratio"] < MIN_SEND_RATIO:
            bad.append("ratio")
        if r["failed"]:
            bad.append("failed")
        if r["p99"] >= MAX_P99_MS:
            bad.append("p99")
        r["bad"] = bad
        checks.append((f"send {name}", not bad))
    res["sends"] = sends

    # Membership PUTs: the building's add PUTs, then on the largest group
    # (its conversation now has history) one removing its last members and
    # one adding them back.
    largest = SIZES[-1]
    gid, big_conv = groups[largest]
    k = min(CHUNK, largest - 1)
    last = pool(largest - 1)[-k:]
    _, remove_ms = api.call("PUT", f"/v1/groups/{gid}", SENDER,
                            {"remove_contact_ids": [ids[m] for m in last]})
    _, readd_ms = api.call("PUT", f"/v1/groups/{gid}", SENDER,
                           {"add_contact_ids": [ids[m] for m in last]})
    check_size(api, gid, largest)
    build = max(puts, key=lambda p: p[2]) if puts else None
    res["puts"] = dict(build=build, build_count=len(puts), k=k, remove=remove_ms, readd=readd_ms)
    log(f"group of {largest}: remove {k} in {remove_ms:.0f} ms, add them back in {readd_ms:.0f} ms")
    if build:
        checks.append(("add PUT while building", build[2] < MAX_PUT_MS))
    checks.append(("remove PUT", remove_ms < MAX_PUT_MS))
    checks.append(("add PUT with history", readd_ms < MAX_PUT_MS))

    # 2. Event reach: one stream per member of the largest group.
    n_streams = min(STREAMS, largest - 1)
    ev = asyncio.run(event_reach(big_conv, pool(n_streams)))
    ev["group"] = largest
    res["events"] = ev
    log(f"events: p50 {fmt(ev['p50'])} ms, p99 {fmt(ev['p99'])} ms, max {fmt(ev['max'])} ms, "
        f"missed {ev['missed_pairs']} pairs on {ev['missed_streams']} streams")
    checks.append(("event p99", ev["p99"] is not None and ev["p99"] < MAX_EVENT_P99_MS))
    checks.append(("events missed", ev["missed_pairs"] == 0 and ev["send_errors"] == 0
                   and ev["messages"] == EVENT_MESSAGES))

    # 3. Inbox and open: viewer A in INBOX_GROUPS groups of INBOX_SMALL,
    # viewer B in as many of INBOX_BIG; each group a conversation with
    # INBOX_MESSAGES messages of the sender's.
    t0 = time.monotonic()

    def inbox_group(args):
        kind, j = args
        a = Api()
        if kind == "A":
            gid, _, _ = make_group(a, ids, f"inbox-a-{j}", [VIEWER_A] + pool(INBOX_SMALL - 2))
        elif INBOX_SEED == "sql":
            gid, _, _ = make_group(a, ids, f"inbox-b-{j}", [VIEWER_B])
            sql_add_pool_members(gid, INBOX_BIG - 2)
            if j == 0:
                check_size(a, gid, INBOX_BIG)
        else:
            gid, _, _ = make_group(a, ids, f"inbox-b-{j}", [VIEWER_B] + pool(INBOX_BIG - 2))
        conv, _ = a.call("POST", "/v1/conversations", SENDER, {"group_id": gid})
        for m in range(INBOX_MESSAGES):
            a.call("POST", "/v1/messages", SENDER, {"conversation_id": conv["id"],
                                                    "message": f"inbox {m}"})
        a.conn.close()
        return kind, conv["id"]

    jobs = [(kind, j) for j in range(INBOX_GROUPS) for kind in ("A", "B")]
    inbox_convs = {"A": [], "B": []}
    with concurrent.futures.ThreadPoolExecutor(SETUP_WORKERS) as ex:
        for kind, conv in ex.map(inbox_group, jobs):
            inbox_convs[kind].append(conv)
    res["inbox_setup_s"] = time.monotonic() - t0
    log(f"inbox: {INBOX_GROUPS} groups of {INBOX_SMALL} and of {INBOX_BIG} "
        f"({INBOX_SEED}) with conversations in {res['inbox_setup_s']:.0f} s")
    viewer = {"A": VIEWER_A, "B": VIEWER_B}
    inbox = {}
    for kind in ("A", "B"):
        page, _ = api.call("GET", f"/v1/conversations?limit={INBOX_LIMIT}", viewer[kind])
        unread = sum(c.get("unread_count") or 0 for c in page["data"])
        log(f"inbox {kind}: {len(page['data'])} conversations on the page, {unread} unread")
        inbox[kind] = measure(f"inbox-{kind}", [("GET", f"/v1/conversations?limit={INBOX_LIMIT}",
                                                 "-", token(viewer[kind]))])
    opens, first_open = {}, {}
    for kind in ("A", "B"):
        conv = inbox_convs[kind][0]
        opened, first_open[kind] = api.call("GET", f"/v1/conversations/{conv}", viewer[kind])
        opens[kind] = measure(f"open-{kind}", [("GET", f"/v1/conversations/{conv}", "-",
                                                token(viewer[kind]))])
    res["inbox"], res["opens"], res["first_open"] = inbox, opens, first_open
    for what, d in (("inbox", inbox), ("open", opens)):
        d["ratio"] = d["B"]["rps"] / d["A"]["rps"] if d["A"]["rps"] else 0
        checks.append((f"{what} B/A", d["ratio"] >= 1 / MAX_INBOX_SLOWDOWN))
        checks.append((f"{what} failed", d["A"]["failed"] == 0 and d["B"]["failed"] == 0))

    time.sleep(1)
    res["peak_mb"] = rss_kib("VmHWM") / 1024
    checks.append(("peak RSS", 0 < res["peak_mb"] < MAX_RSS_MB))
    res["checks"] = checks
    return res


def fmt(v, d=1):
    return "n/a" if v is None else f"{v:.{d}f}"


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(res):
    """The results as markdown tables (also what is printed)."""
    ok = dict(res["checks"])
    out = [f"### {res['store']}", ""]
    out += [f"Send rate: `POST /v1/messages`, wrk {CONNECTIONS} connections, one sender, "
            f"{WARMUP} s warm-up + {DURATION} s (targets: group/direct >= {MIN_SEND_RATIO}, "
            f"no failed request, p99 < {MAX_P99_MS:g} ms).", ""]
    out += ["| target | req/s | p50 ms | p99 ms | failed | / direct | verdict |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for name, r in res["sends"]:
        v = verdict(not r["bad"]) + (f" ({', '.join(r['bad'])})" if r["bad"] else "")
        out.append(f"| {name} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | "
                   f"{r['failed']} | {r['ratio']:.2f} | {v} |")
    p = res["puts"]
    out += ["", f"Membership `PUT /v1/groups/:id` (target < {MAX_PUT_MS:g} ms each):", "",
            "| PUT | members | ms | verdict |", "|---|---:|---:|---|"]
    if p["build"]:
        size, n, ms = p["build"]
        out.append(f"| add, slowest of {p['build_count']} while building "
                   f"(group of {size}) | {n} | {ms:.0f} | {verdict(ok['add PUT while building'])} |")
    out.append(f"| remove, group of {SIZES[-1]} with history | {p['k']} | {p['remove']:.0f} | "
               f"{verdict(ok['remove PUT'])} |")
    out.append(f"| add them back | {p['k']} | {p['readd']:.0f} | "
               f"{verdict(ok['add PUT with history'])} |")
    e = res["events"]
    out += ["", f"Event reach: {e['opened']} of {e['streams']} streams open (members of the "
            f"{e['group']}-member group), {e['messages']} messages {EVENT_GAP_MS} ms apart "
            f"({e['send_errors']} send errors); delay from a send's response to its "
            f"`message.created` on each stream (targets: p99 < {MAX_EVENT_P99_MS:g} ms, "
            f"none missed within {EVENT_TIMEOUT:g} s).", "",
            "| pairs | p50 ms | p99 ms | max ms | missed pairs | streams missing one | verdict |",
            "|---:|---:|---:|---:|---:|---:|---|",
            f"| {e['pairs']} | {fmt(e['p50'])} | {fmt(e['p99'])} | {fmt(e['max'])} | "
            f"{e['missed_pairs']} | {e['missed_streams']} | "
            f"{verdict(ok['event p99'] and ok['events missed'])} |"]
    out += ["", f"Inbox and open: viewer A in {INBOX_GROUPS} groups of {INBOX_SMALL}, viewer B "
            f"in {INBOX_GROUPS} groups of {INBOX_BIG} ({INBOX_SEED}; setup "
            f"{res['inbox_setup_s']:.0f} s), {INBOX_MESSAGES} messages each; wrk "
            f"{CONNECTIONS} connections (target: B >= 1/{MAX_INBOX_SLOWDOWN:g} of A's req/s). "
            f"The first open (ms) marks the messages read; wrk's then open it again.", "",
            "| request | A req/s | A p99 ms | B req/s | B p99 ms | B / A | verdict |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for what, d, label in (("inbox", res["inbox"], f"`GET /v1/conversations?limit={INBOX_LIMIT}`"),
                           ("open", res["opens"], "`GET /v1/conversations/:id`")):
        v = verdict(ok[f"{what} B/A"] and ok[f"{what} failed"])
        fails = d["A"]["failed"] + d["B"]["failed"]
        if fails:
            v += f" ({fails} failed)"
        out.append(f"| {label} | {d['A']['rps']:.0f} | {d['A']['p99']:.1f} | {d['B']['rps']:.0f} | "
                   f"{d['B']['p99']:.1f} | {d['ratio']:.2f} | {v} |")
    fo = res["first_open"]
    out.append(f"| first open, ms | {fo['A']:.0f} | | {fo['B']:.0f} | | | |")
    out += ["", f"Peak RSS (VmHWM, end of run): {res['peak_mb']:.0f} MB (target < "
            f"{MAX_RSS_MB:g} MB): {verdict(ok['peak RSS'])}. With {e['opened']} streams open: "
            f"{e['rss_open_mb']:.0f} MB.", ""]
    failed = [what for what, good in res["checks"] if not good]
    out.append(f"**{res['store']}: {'all targets PASS' if not failed else 'FAIL: ' + ', '.join(failed)}**")
    out.append("")
    return "\n".join(out), not failed


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("seed", "run"):
        sys.exit("usage: groups.py seed|run (through bench/groups.sh)")
    if sys.argv[1] == "seed":
        seed()
        return
    try:
        res = run()
    except Exception as e:  # noqa: BLE001 - report and stop the store's run
        log(f"the run broke: {e!r}")
        md = f"### {STORE}\n\n**{STORE}: the run broke: {e}**\n"
        if os.environ.get("GROUPS_MD"):
            with open(os.environ["GROUPS_MD"], "w") as f:
                f.write(md)
        sys.exit(2)
    md, good = report(res)
    print()
    print(md, flush=True)
    if os.environ.get("GROUPS_MD"):
        with open(os.environ["GROUPS_MD"], "w") as f:
            f.write(md)
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
