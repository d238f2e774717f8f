#!/usr/bin/env python3
"""confab's benchmark (see bench/README.md). Run through bench/run.sh.

Builds the release binary, seeds a scratch PostgreSQL database and an SQLite
file, and runs each scenario with wrk at 32 connections; on PostgreSQL, right
after each wrk run, pgbench runs (a) the exact statements the endpoint issued
(captured with log_statement=all) and (b) hand-written least SQL, over the
same targets. Writes the generated part of docs/performance.md and keeps the
raw outputs in a temporary directory, which it prints.

Standard library only.
"""

import base64
import datetime
import glob
import hashlib
import json
import math
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
DOC = os.path.join(ROOT, "docs", "performance.md")

SIZES = {
    "full": dict(contacts=10_000, convs=50_000, messages=5_000_000, big=1_000_000, inbox=500),
    # 1/5 of the messages: the SQLite default at full scale (disk and time
    # on a small shared machine; the store's costs are per page, not per row).
    "fifth": dict(contacts=2_000, convs=10_000, messages=1_000_000, big=200_000, inbox=500),
    # 1/50 of the data; the inbox keeps its 500 conversations (the scenario).
    "small": dict(contacts=200, convs=1_000, messages=100_000, big=20_000, inbox=500),
}
SCALE = os.environ.get("BENCH_SCALE", "full")
if SCALE not in SIZES:
    sys.exit(f"BENCH_SCALE must be one of {', '.join(SIZES)}")
SQLITE_SCALE = os.environ.get("BENCH_SQLITE_SCALE", "fifth" if SCALE == "full" else SCALE)
DURATION = int(os.environ.get("BENCH_DURATION", "15" if SCALE == "full" else "5"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "3" if SCALE == "full" else "1"))
CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "32"))
STORES = os.environ.get("BENCH_STORES", "postgres sqlite").split()
PERF = os.environ.get("BENCH_PERF", "0") == "1"
# A subset of the scenarios (comma-separated names), for a quick look; the
# report then has only those, and the targets that need a missing one say n/a.
ONLY = [s for s in os.environ.get("BENCH_SCENARIOS", "").split(",") if s]
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", "5432", "postgres"
PG_LOG = os.environ.get("BENCH_PG_LOG") or next(
    iter(sorted(glob.glob("/var/log/postgresql/postgresql-*-main.log"))), ""
)
# BENCH_BIN: another build to measure (say, main's before a change); else
# the workspace's release binary (in CARGO_TARGET_DIR when that is set).
BIN = os.environ.get("BENCH_BIN") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "release", "confab"
)
BODY_TEXT = "Hello from the benchmark"

# The Rust peer's published figures (SQLite, same machine class): the
# SQLite targets are set against them (bench/README.md).
PEER = {"page_first": 2436, "send": 390, "get_message": 13304}

# Scenario order, and what each one is.
SCENARIOS = [
    ("send", "POST /v1/messages to one's own conversation"),
    ("page_first", "first page of the largest conversation"),
    ("page_deep", "a page 50-99 % deep in it, by `starting_after` cursor"),
    ("inbox", "GET /v1/conversations of the contact with 500 conversations"),
    ("get_message", "GET /v1/messages/:id"),
    ("feed", "GET /v1/messages (all conversations) of that contact"),
    ("mixed", "20 % send, 40 % page, 20 % get message, 20 % inbox"),
]


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def out(cmd, **kw):
    p = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise subprocess.CalledProcessError(p.returncode, cmd)
    return p.stdout


# ---------------------------------------------------------------- the data set


def bench_id(ms, kind, n):
    """The seeds' id: ms(8)-ms(4)-7<kind>-8000-<n>, UUIDv7-shaped."""
    return f"{ms >> 16:08x}-{ms & 65535:04x}-7{kind:03x}-8000-{n:012x}"


class DataSet:
    def __init__(self, sizes, base):
        self.s = sizes
        self.base = base

    def contact(self, i):
        return bench_id((self.base - 7_200_000_000) // 1000, 1, i)

    def conv(self, j):
        return bench_id((self.base - 3_600_000_000) // 1000, 2, j)

    def message(self, k):
        return bench_id((self.base + k * 1000) // 1000, 3, k)

    @staticmethod
    def token(i):
        return f"cfb_bench_{i}"

    def conv_of(self, user):
        """An ordinary conversation that `user` (>= 2) created."""
        c, inbox = self.s["contacts"], self.s["inbox"]
        j = user - 2
        while j <= inbox:
            j += c - 1
        assert 2 + j % (c - 1) == user and j <= self.s["convs"], "too few conversations"
        return j

    def last_message_of(self, j):
        """The newest message of ordinary conversation j."""
        m, v = self.s["messages"], self.s["convs"]
        ratio = m // self.s["big"]
        k = (j - 2) + ((m - (j - 2)) // (v - 1)) * (v - 1)
        while k > 0 and (k % ratio == 0 or 2 + k % (v - 1) != j):
            k -= v - 1
        assert k > 0, "conversation without messages"
        return k

    def deep_cursor(self, position):
        """The message `position` places from the newest in conversation 1."""
        ratio = self.s["messages"] // self.s["big"]
        return self.message(ratio * (self.s["big"] - position))


def targets_for(ds):
    """Per scenario, the requests wrk picks from at random (one per line),
    each a dict with what the least SQL needs too."""
    c1 = ds.conv(1)

    def page(user, conv, cursor=None):
        path = f"/v1/messages?conversation_id={conv}"
        if cursor:
            path += f"&starting_after={cursor}"
        return dict(kind="page", user=user, conv=conv, cursor=cursor, method="GET", path=path)

    def send(user, conv):
        body = f"conversation_id={conv}&message={BODY_TEXT.replace(' ', '+')}"
        return dict(kind="send", user=user, conv=conv, method="POST", path="/v1/messages", body=body)

    def get(user, msg):
        return dict(kind="get", user=user, msg=msg, method="GET", path=f"/v1/messages/{msg}")

    def inbox(user):
        return dict(kind="inbox", user=user, method="GET", path="/v1/conversations")

    def feed(user):
        return dict(kind="feed", user=user, method="GET", path="/v1/messages")

    users = list(range(101, 133))
    big = ds.s["big"]
    t = {
        "send": [send(u, ds.conv(ds.conv_of(u))) for u in users],
        "page_first": [page(1 + i % 2, c1) for i in range(32)],
        "page_deep": [
            page(1 + i % 2, c1, ds.deep_cursor(big // 2 + i * (big * 49 // 100) // 31))
            for i in range(32)
        ],
        "inbox": [inbox(1) for _ in range(4)],
        "get_message": [
            get(u, ds.message(ds.last_message_of(ds.conv_of(u)))) for u in users
        ],
        "feed": [feed(1) for _ in range(4)],
        "mixed": [],
    }
    for u in users[:16]:
        j = ds.conv_of(u)
        conv = ds.conv(j)
        t["mixed"] += [send(u, conv), page(u, conv), page(u, conv)]
        t["mixed"] += [get(u, ds.message(ds.last_message_of(j))), inbox(u)]
    return t


# The scenarios whose wrk connections each belong to one client of pgbench's
# grouping (a user's sends, a user's mix) instead of picking any line: their
# writes of one user must not run concurrently on one side only. pgbench
# runs one client per send target and two per mixed user (`run_pgbench`),
# so its clients never send two of one user's messages at once; wrk
# picking lines at random did, and two sends to one conversation queue on
# its row lock. Reads conflict with nothing and keep the random picks.
PER_CONNECTION = {"send", "mixed"}


def target_group(scenario, t, i):
    """The pgbench group of a scenario's i-th target (as `exact_scripts`
    and `least_scripts` group them): its user for `mixed`, else itself."""
    return t["user"] if scenario == "mixed" else i


def write_targets(path, targets, scenario):
    """One line per target, its group last. A line's group is pgbench's for
    the same target where wrk uses it (`PER_CONNECTION`): a mixed user's, or
    a send line's own (a send's lines are all distinct, so the line's index
    is the distinct target's)."""
    with open(path, "w") as f:
        for i, t in enumerate(targets):
            f.write(f"{t['method']}\t{t['path']}\t{t.get('body') or '-'}\t{DataSet.token(t['user'])}"
                    f"\t{target_group(scenario, t, i)}\n")


def distinct(targets):
    """Distinct targets with their weights (pgbench picks scripts the way wrk
    picks lines)."""
    seen = {}
    for t in targets:
        key = (t["method"], t["path"], t.get("body"), t["user"])
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [t, 1]
    return list(seen.values())


def token_rows(ds):
    for i in range(1, ds.s["contacts"] + 1):
        h = hashlib.sha256(DataSet.token(i).encode()).hexdigest()
        yield (bench_id((ds.base - 7_200_000_000) // 1000, 4, i), ds.contact(i), h, ds.base - 7_200_000_000)


# ------------------------------------------------------------------ the server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, database_url, logfile):
        self.port = free_port()
        # Rate limits off (0): a scenario sends hundreds of requests per
        # second with one token, which the default per-token budget refuses.
        env = dict(os.environ, DATABASE_URL=database_url, CONFAB_LISTEN=f"127.0.0.1:{self.port}", RUST_LOG="warn",
                   CONFAB_RATE_LIMIT_PER_SECOND="0", CONFAB_RATE_LIMIT_ANON_PER_SECOND="0")
        self.log = open(logfile, "a")
        self.proc = subprocess.Popen([BIN, "serve"], env=env, stdout=self.log, stderr=self.log)
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited; see {logfile}")
                time.sleep(0.1)
        raise RuntimeError("the server did not come up")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, t):
        body = t.get("body")
        req = urllib.request.Request(
            self.url + t["path"],
            data=body.encode() if body else None,
            method=t["method"],
            headers={"Authorization": f"Bearer {DataSet.token(t['user'])}"},
        )
        if body:
            req.add_header("Content-Type", "application/x-www-form-urlencoded")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def hwm_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------- load tools


def run_wrk(server, targets_file, seconds, raw_file, per_connection=False):
    """wrk on `targets_file`: 2 threads picking lines at random, or, with
    `per_connection`, one thread per connection, each a client of one group
    (`wrk.lua`), as pgbench's clients are."""
    env = dict(os.environ, BENCH_TARGETS=targets_file, BENCH_PER_CONNECTION="1" if per_connection else "0")
    threads = CONNECTIONS if per_connection else 2
    cmd = ["wrk", f"-t{threads}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "5s",
           "-s", os.path.join(BENCH, "wrk.lua"), server.url]
    text = out(cmd, env=env)
    with open(raw_file, "a") as f:
        f.write(" ".join(cmd) + "\n" + text + "\n")
    m = re.search(r"^BENCH (.*)$", text, re.M)
    vals = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    errors = sum(vals[k] for k in ("connect", "read", "write", "status", "timeout"))
    return dict(
        rps=vals["requests"] / (vals["duration_us"] / 1e6),
        p50=vals["p50_us"] / 1000,
        p99=vals["p99_us"] / 1000,
        errors=errors,
        requests=vals["requests"],
    )


def run_pgbench(db, scripts, seconds, raw_file):
    """scripts: [(path, weight, group)]. Returns (the total tps, the p99 of
    its transactions' latencies in ms), or (None, None) when a run failed.

    The latencies come from pgbench's own per-transaction log (`-l`), one
    transaction in five sampled so that writing the log costs pgbench
    little: how long PostgreSQL alone, on this machine, makes the slowest
    of its clients wait, beside confab's p99.

    One pgbench process per group (a target, or a user's mix), its share of
    the clients each: a pgbench client prepares every script it may run, so
    that 32 clients over 32 scripts would spend the run preparing. This way
    each connection prepares its own statements once, as the server's pool
    does."""
    groups = {}
    for path, weight, group in scripts:
        groups.setdefault(group, []).append((path, weight))
    groups = list(groups.values())
    # More groups than clients: deal them out.
    while len(groups) > CONNECTIONS:
        groups = [sum(groups[i::CONNECTIONS], []) for i in range(CONNECTIONS)]
    procs = []
    logs = tempfile.mkdtemp(prefix="pgbench-log-")
    for i, group in enumerate(groups):
        clients = CONNECTIONS // len(groups) + (1 if i < CONNECTIONS % len(groups) else 0)
        cmd = ["pgbench", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-n", "-M", "prepared",
               f"-c{clients}", f"-j{min(2, clients)}", f"-T{seconds}",
               "-l", "--sampling-rate=0.2", f"--log-prefix={os.path.join(logs, str(i))}"]
        for path, weight in group:
            cmd += ["-f", f"{path}@{weight}"]
        cmd.append(db)
        procs.append((cmd, subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    total, ok = 0.0, True
    with open(raw_file, "a") as f:
        for cmd, p in procs:
            text = p.communicate()[0]
            f.write(" ".join(cmd) + "\n" + text + "\n")
            m = re.search(r"tps = ([\d.]+)", text)
            failed = re.search(r"number of failed transactions: (\d+)", text)
            if p.returncode != 0 or not m or (failed and int(failed.group(1)) > 0):
                ok = False
            else:
                total += float(m.group(1))
    latencies = []
    for name in os.listdir(logs):
        with open(os.path.join(logs, name)) as f:
            # client, transaction, latency in us, script, epoch s, us
            latencies += [int(line.split()[2]) for line in f if line.strip()]
    shutil.rmtree(logs, ignore_errors=True)
    if not ok:
        log(f"pgbench failed, see {raw_file}")
        return None, None
    p99 = percentile(latencies, 0.99) / 1000 if latencies else None
    with open(raw_file, "a") as f:
        f.write(f"pgbench sampled latencies: {len(latencies)}, p99 {fmt(p99, '.1f')} ms\n")
    return total, p99


def percentile(values, q):
    """The nearest-rank percentile q (0-1) of values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# ------------------------------------------------------------- SQL for pgbench

NOW_US = "(extract(epoch from now()) * 1000000)::bigint"
# A fresh UUIDv7-shaped id, the same within one transaction: time first (so
# it is appended to the index, like the server's), then a random tail.
NEW_ID = (f"(lpad(to_hex({NOW_US} / 1000), 12, '0') || '7' || lpad(to_hex({NOW_US} % 1000), 3, '0') "
          "|| lpad(to_hex(:r::bigint), 16, '0'))::uuid")
NEW_ID_SET = "\\set r random(1, 4503599627370495)\n"


def q(v):
    # pgbench reads `:name` as a variable even inside a string literal (an
    # event's JSON payload has `"created_at":1795...`): such text goes in
    # base64, decoded by the server.
    if ":" in v:
        b64 = base64.b64encode(v.encode()).decode()
        return f"convert_from(decode('{b64}', 'base64'), 'UTF8')"
    return "'" + v.replace("'", "''") + "'"


UUID_V7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")


def made_during(v, t0_us, t1_us):
    """Whether `v` is a UUIDv7 whose time lies in [t0, t1] (microseconds,
    one second of slack): an id the captured request created (a message,
    its event, an attachment), which a replay must vary."""
    if not UUID_V7.fullmatch(v):
        return False
    ms = int(v[:8] + v[9:13], 16)
    return t0_us // 1000 - 1000 <= ms <= t1_us // 1000 + 1000


# Statements of the server's background work (the event hub's reads, its
# LISTEN connection's checks and the NOTIFY it sends after the process's
# commits, coalesced to one in flight, the webhook worker, pruning), which
# land in the capture window beside the request's own and are not part of
# any request.
BACKGROUND = re.compile(r'pg_snapshot_xmin|"event_recipients"\."position" BETWEEN|webhook'
                        r'|^\s*(LISTEN|NOTIFY)\b|^\s*SELECT 1\s*;?\s*$|^\s*DELETE FROM "events"', re.S)


def least_sql(ds, t, events=False):
    """The least SQL the contract needs for one request, by hand: one
    statement, one round trip (authentication included). A send is the
    token lookup and one membership-checked insert, as the benchmark first
    set it; with `events`, it also writes the unread counters and the event."""
    h = hashlib.sha256(DataSet.token(t["user"]).encode()).hexdigest()
    auth = (f"me AS (SELECT c.* FROM tokens t JOIN contacts c ON c.id = t.contact_id "
            f"WHERE t.token_hash = {q(h)} AND t.revoked_at IS NULL "
            f"AND (t.expires_at IS NULL OR t.expires_at > {NOW_US}))")

    def visible(c, me):
        return (f"(({c}.group_id IS NULL AND ({c}.creator_id = {me} OR {c}.peer_id = {me})) "
                f"OR {c}.group_id IN (SELECT group_id FROM group_members WHERE contact_id = {me}))")

    # The caller's conversations, each index used directly.
    mine = ("mine AS (SELECT c.* FROM me JOIN conversations c ON c.creator_id = me.id WHERE c.group_id IS NULL "
            "UNION ALL SELECT c.* FROM me JOIN conversations c ON c.peer_id = me.id WHERE c.group_id IS NULL "
            "UNION ALL SELECT c.* FROM me JOIN group_members g ON g.contact_id = me.id "
            "JOIN conversations c ON c.group_id = g.group_id)")
    hydrate = ("SELECT m.id, m.conversation_id, m.body, m.read_at, m.created_at, m.updated_at, "
               "s.id, s.username, s.phone_number, s.avatar_url, s.last_active_at, s.created_at, "
               "(SELECT json_agg(json_build_array(r.name, r.contact_id, rc.username) ORDER BY r.seq) "
               "FROM reactions r JOIN contacts rc ON rc.id = r.contact_id WHERE r.message_id = m.id), "
               "(SELECT json_agg(a ORDER BY a.seq) FROM attachments a WHERE a.message_id = m.id) ")
    kind = t["kind"]
    # The message carries its conversation's audience (the feed's index
    # ranges; migration 2026-11-26-140000): copied from the checked row.
    conv = (f"conv AS (SELECT c.id, c.creator_id, c.peer_id, c.group_id FROM me, conversations c "
            f"WHERE c.id = {q(t.get('conv', ''))} AND {visible('c', 'me.id')})")
    # With its text folded for search (migration 2026-12-10-100000), which
    # the trigram index then holds, as a send's does.
    insert = (f"ins AS (INSERT INTO messages (id, conversation_id, sender_id, body, body_folded, "
              f"created_at, direct_creator_id, direct_peer_id, group_id) "
              f"SELECT {NEW_ID}, conv.id, me.id, {q(BODY_TEXT)}, {q(BODY_TEXT.lower())}, {NOW_US}, "
              f"CASE WHEN conv.group_id IS NULL THEN conv.creator_id END, conv.peer_id, conv.group_id "
              f"FROM conv, me RETURNING *)")
    if kind == "send" and not events:
        return NEW_ID_SET + (
            f"WITH {auth}, {conv}, "
            f"upd AS (UPDATE conversations SET last_active_at = {NOW_US}, activity_at = {NOW_US} "
            f"WHERE id IN (SELECT id FROM conv) AND (last_active_at IS NULL OR last_active_at < {NOW_US})), "
            f"{insert} "
            f"SELECT ins.*, me.* FROM ins, me;\n")
    if kind == "send":
        # What a send does today besides the insert: the
        # conversation's message number, the sender's own count (the others'
        # unread counts follow from the number), the `message.created` event
        # (its payload the message as the GET answers it) and one recipient
        # row per member.
        # The bench's sends are to direct conversations: the members are the
        # conversation's creator and peer.
        return NEW_ID_SET + (
            f"WITH {auth}, {conv}, "
            f"upd AS (UPDATE conversations SET message_seq = message_seq + 1, last_active_at = {NOW_US}, "
            f"activity_at = {NOW_US} "
            f"WHERE id IN (SELECT id FROM conv) AND (last_active_at IS NULL OR last_active_at < {NOW_US})), "
            f"{insert}, "
            f"cnt AS (INSERT INTO conversation_states (conversation_id, contact_id, is_pinned, is_muted, "
            f"read_seq, own_after) SELECT conv.id, me.id, FALSE, FALSE, 0, 1 FROM conv, me "
            f"ON CONFLICT (conversation_id, contact_id) "
            f"DO UPDATE SET own_after = conversation_states.own_after + 1), "
            f"ev AS (INSERT INTO events (id, position, type, actor_id, created_at, payload) "
            f"SELECT ins.id, pg_current_xact_id()::text::bigint * 1048576, 'message.created', me.id, {NOW_US}, "
            f"json_build_object('id', ins.id, 'conversation_id', ins.conversation_id, 'text', ins.body, "
            f"'sender', json_build_object('id', me.id, 'username', me.username, 'phone_number', me.phone_number, "
            f"'avatar_url', me.avatar_url, 'last_active_at', me.last_active_at, 'created_at', me.created_at), "
            f"'reactions', json_build_array(), 'attachments', json_build_array(), 'read_at', NULL, "
            f"'created_at', ins.created_at, 'updated_at', NULL)::text FROM ins, me RETURNING id, position), "
            f"rcp AS (INSERT INTO event_recipients (contact_id, position, event_id) "
            f"SELECT m.id, ev.position, ev.id FROM ev, conv CROSS JOIN LATERAL "
            f"(VALUES (conv.creator_id), (conv.peer_id)) m (id)) "
            f"SELECT ins.*, me.* FROM ins, me;\n")
    if kind == "page":
        # The ids from the request as constants, the checks as one-time
        # gates: the page is one ordered index range read of 11 rows.
        # The page is a LATERAL subquery on the conversation: planned with
        # the conversation id as a parameter, it reads the conversation's own
        # index (11 rows from the cursor). With the id as a constant, the
        # planner, knowing that this conversation holds 20 % of all
        # messages, walks the global order index instead, through every
        # newer message of other conversations.
        cur, cond = "", ""
        if t.get("cursor"):
            cur = (f", cur AS (SELECT m.created_at FROM messages m "
                   f"WHERE m.id = {q(t['cursor'])} AND m.conversation_id = {q(t['conv'])})")
            cond = (f" AND m.created_at <= (SELECT created_at FROM cur) AND (m.created_at, m.id) < "
                    f"((SELECT created_at FROM cur), {q(t['cursor'])}::uuid)")
        return (f"WITH {auth}, conv AS (SELECT c.id FROM me, conversations c WHERE c.id = {q(t['conv'])} "
                f"AND {visible('c', 'me.id')}){cur}, "
                f"page AS (SELECT m.* FROM conv CROSS JOIN LATERAL (SELECT * FROM messages m "
                f"WHERE m.conversation_id = conv.id{cond} "
                f"ORDER BY m.created_at DESC, m.id DESC LIMIT 11) m) "
                f"{hydrate}FROM page m JOIN contacts s ON s.id = m.sender_id "
                f"ORDER BY m.created_at DESC, m.id DESC;\n")
    if kind == "get":
        return (f"WITH {auth} {hydrate}FROM me, messages m JOIN conversations c ON c.id = m.conversation_id "
                f"JOIN contacts s ON s.id = m.sender_id WHERE m.id = {q(t['msg'])} AND {visible('c', 'me.id')};\n")
    if kind == "inbox":
        return (f"WITH {auth}, {mine} SELECT mine.*, s.is_pinned, s.is_muted, s.archived_at, s.last_opened_at "
                f"FROM mine LEFT JOIN conversation_states s ON s.conversation_id = mine.id "
                f"AND s.contact_id = (SELECT id FROM me) ORDER BY mine.activity_at DESC, mine.id DESC LIMIT 11;\n")
    if kind == "feed":
        # The ranges of the messages' audience indexes: the caller's direct
        # messages as creator, as peer, and each of the caller's groups'.
        ranges = ("SELECT m.* FROM me CROSS JOIN LATERAL (SELECT * FROM messages m "
                  "WHERE m.direct_creator_id = me.id ORDER BY m.created_at DESC, m.id DESC LIMIT 11) m "
                  "UNION ALL SELECT m.* FROM me CROSS JOIN LATERAL (SELECT * FROM messages m "
                  "WHERE m.direct_peer_id = me.id ORDER BY m.created_at DESC, m.id DESC LIMIT 11) m "
                  "UNION ALL SELECT m.* FROM me JOIN group_members g ON g.contact_id = me.id "
                  "CROSS JOIN LATERAL (SELECT * FROM messages m WHERE m.group_id = g.group_id "
                  "ORDER BY m.created_at DESC, m.id DESC LIMIT 11) m")
        return (f"WITH {auth}, page AS (SELECT * FROM ({ranges}) m "
                f"ORDER BY m.created_at DESC, m.id DESC LIMIT 11) "
                f"{hydrate}FROM page m JOIN contacts s ON s.id = m.sender_id "
                f"ORDER BY m.created_at DESC, m.id DESC;\n")
    raise ValueError(kind)


LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(\d+)\] (\S*)@(\S*) ([A-Z]+):  (.*)$")
PARAM = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')")
MARK = "confab-bench-mark"


def parse_capture(text, db):
    """The statements of each marked request, in order: [[(sql, {n: value
    or None})]] (values as logged: text, quotes undoubled)."""
    requests, current, last_of_pid, last = {}, None, {}, None
    for line in text.splitlines():
        m = LOG_LINE.match(line)
        if not m:
            if line.startswith("\t") and last is not None:
                last[0] += "\n" + line[1:]
            continue
        pid, _, dbname, level, msg = m.groups()
        last = None
        if dbname != db:
            continue
        if level == "LOG":
            sm = re.match(r"(?:statement|execute [^:]*): (.*)$", msg, re.S)
            if not sm:
                continue
            sql = sm.group(1)
            mk = re.search(MARK + r" (\d+|skip)", sql)
            if mk:
                # `skip`: what follows belongs to no request (a warm-up).
                current = None if mk.group(1) == "skip" else int(mk.group(1))
                if current is not None:
                    requests[current] = []
                continue
            entry = [sql, {}]
            # Its parameters (the DETAIL line next) go to this entry even
            # when it belongs to no request.
            last_of_pid[pid] = entry
            last = entry
            if current is None or BACKGROUND.search(sql):
                continue
            requests[current].append(entry)
            last_of_pid[pid] = entry
            last = entry
        elif level == "DETAIL" and msg.startswith("parameters: ") and pid in last_of_pid:
            params = {}
            for n, v in PARAM.findall(msg):
                params[int(n)] = None if v == "NULL" else v[1:-1].replace("''", "'")
            last_of_pid[pid][1] = params
        elif level == "ERROR":
            raise RuntimeError(f"an error during the capture: {msg}")
    return requests


def exact_script(statements, new_id, t0_us, t1_us):
    """A pgbench script of the captured statements, the parameters inlined as
    (untyped) literals, except the new row's id and "now", which vary."""
    uses_new = False

    def lit(v):
        nonlocal uses_new
        if v is None:
            return "NULL"
        if new_id and v == new_id:
            uses_new = True
            return NEW_ID
        if made_during(v, t0_us, t1_us):
            uses_new = True
            return NEW_ID
        # A JSON object is text; `{a,b}` is an array of ids.
        if new_id and v.startswith("{") and not v.startswith('{"') and new_id in v:
            uses_new = True
            items = [NEW_ID if e == new_id else q(e) for e in v[1:-1].split(",")]
            return "ARRAY[" + ", ".join(items) + "]"
        if re.fullmatch(r"\d{16}", v) and t0_us - 5_000_000 <= int(v) <= t1_us + 5_000_000:
            return NOW_US
        return q(v)

    lines = []
    for sql, params in statements:
        # A send's deadline on the server's clock (`confab_settle_send`):
        # as confab sets it, the call's 1.8 s less its 0.25 s margin from
        # now, not the captured moment, long past when pgbench runs.
        sql = re.sub(r"confab_settle_send\(\$\d+\b",
                     f"confab_settle_send({NOW_US} + 1550000", sql)
        body = re.sub(r"\$(\d+)\b", lambda m: lit(params.get(int(m.group(1)))), sql)
        lines.append(" ".join(body.split()).rstrip(";") + ";")
    return (NEW_ID_SET if uses_new else "") + "\n".join(lines) + "\n"


def capture(ds, db, targets_by_scenario, raw):
    """Runs every distinct target once through a server whose sessions log
    all statements, and turns each request's statements into a script."""
    if not PG_LOG or not os.access(PG_LOG, os.R_OK):
        log("no readable PostgreSQL log (BENCH_PG_LOG): no exact-SQL runs")
        return {}
    url = (f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{db}"
           "?options=-c%20log_statement%3Dall%20-c%20log_parameter_max_length%3D-1")
    server = Server(url, os.path.join(raw, "capture-server.log"))
    plan = []
    try:
        # Once unmarked first: warm connections, and the once-a-minute
        # last_active_at write is out of the way.
        for scenario, targets in targets_by_scenario.items():
            for t, _ in distinct(targets):
                server.request(t)
        start = os.path.getsize(PG_LOG)
        t0 = time.time_ns() // 1000
        n = 0
        for scenario, targets in targets_by_scenario.items():
            for t, weight in distinct(targets):
                n += 1
                # Its token fresh in the server's cache, as it is under
                # load: the pass above ran long enough for the cache (5 s)
                # to forget the first targets' tokens. Marked `skip`.
                out(["psql", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-d", db, "-Atqc",
                     f"SELECT '{MARK} skip'"], env=dict(os.environ, PGOPTIONS="-c log_statement=all"))
                server.request(t)
                out(["psql", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-d", db, "-Atqc",
                     f"SELECT '{MARK} {n}'"], env=dict(os.environ, PGOPTIONS="-c log_statement=all"))
                status, body = server.request(t)
                if status >= 300:
                    raise RuntimeError(f"{t['method']} {t['path']} answered {status}: {body[:300]!r}")
                new_id = json.loads(body).get("id") if t["kind"] == "send" else None
                plan.append((scenario, n, t, weight, new_id))
        # The last statements reach the log file asynchronously.
        out(["psql", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-d", db, "-Atqc",
             f"SELECT '{MARK} {n + 1}'"], env=dict(os.environ, PGOPTIONS="-c log_statement=all"))
        t1 = time.time_ns() // 1000
        time.sleep(1)
    finally:
        server.stop()
    with open(PG_LOG, errors="replace") as f:
        f.seek(start)
        text = f.read()
    with open(os.path.join(raw, "capture.log"), "w") as f:
        f.write(text)
    requests = parse_capture(text, db)
    scripts = {}
    sqldir = os.path.join(raw, "sql")
    os.makedirs(sqldir, exist_ok=True)
    for scenario, n, t, weight, new_id in plan:
        stmts = requests.get(n)
        if not stmts:
            raise RuntimeError(f"no statements captured for request {n} ({scenario})")
        path = os.path.join(sqldir, f"exact-{scenario}-{n}.sql")
        with open(path, "w") as f:
            f.write(exact_script(stmts, new_id, t0, t1))
        scripts.setdefault(scenario, []).append((path, weight, target_group(scenario, t, n), len(stmts)))
    return scripts


def least_scripts(ds, targets_by_scenario, raw):
    sqldir = os.path.join(raw, "sql")
    os.makedirs(sqldir, exist_ok=True)
    scripts = {}
    for scenario, targets in targets_by_scenario.items():
        for i, (t, weight) in enumerate(distinct(targets)):
            path = os.path.join(sqldir, f"least-{scenario}-{i}.sql")
            with open(path, "w") as f:
                f.write(least_sql(ds, t))
            scripts.setdefault(scenario, []).append((path, weight, target_group(scenario, t, i)))
            if scenario == "send":
                path = os.path.join(sqldir, f"least-events-{scenario}-{i}.sql")
                with open(path, "w") as f:
                    f.write(least_sql(ds, t, events=True))
                scripts.setdefault(f"{scenario}:events", []).append((path, weight, target_group(scenario, t, i)))
    return scripts


def check_scripts(db, scripts, raw):
    """Each script once, so that a broken one fails loudly before the runs."""
    for path, *_ in scripts:
        p = subprocess.run(["pgbench", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-n", "-M", "prepared",
                            "-t1", "-c1", "-f", path, db], text=True, capture_output=True)
        if p.returncode != 0:
            raise RuntimeError(f"pgbench script {path} fails:\n{p.stderr[-2000:]}")


# ------------------------------------------------------------------- seeding


def psql(db, *args, **kw):
    return out(["psql", "-h", PG_HOST, "-p", PG_PORT, "-U", PG_USER, "-d", db, "-v", "ON_ERROR_STOP=1",
                "-Atq", *args], **kw)


# The seed's text of message k, and its folded form, in both seed files.
SEED_BODY = "'Lorem ipsum dolor sit amet, consectetur adipiscing, message ' || k"
SEED_FOLDED = "'lorem ipsum dolor sit amet, consectetur adipiscing, message ' || k"


def with_bodies(text, k):
    """The seed's text with each message's body and folded body read from
    the table `seed_bodies` (k, body, folded), `k` naming the message's
    number in the seed's statement."""
    if SEED_BODY not in text or SEED_FOLDED not in text:
        raise SystemExit("the seed's body expressions are not where bench.py expects them")
    return (text.replace(SEED_BODY, f"(SELECT sb.body FROM seed_bodies sb WHERE sb.k = {k})")
            .replace(SEED_FOLDED, f"(SELECT sb.folded FROM seed_bodies sb WHERE sb.k = {k})"))


def seed_postgres(ds, db, raw, bodies=None):
    """Seeds database `db`; `bodies(k)`, when given, is message k's
    (text, folded text) instead of the seed's sentence."""
    url = f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{db}"
    psql("postgres", "-c", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    psql("postgres", "-c", f"CREATE DATABASE {db}")
    sh([BIN, "migrate"], env=dict(os.environ, DATABASE_URL=url, RUST_LOG="warn"))
    t0 = time.time()
    args = [f"-v{k}={v}" for k, v in ds.s.items()] + [f"-vbase={ds.base}"]
    with open(os.path.join(BENCH, "seed_postgres.sql")) as f:
        text = f.read()
    if bodies:
        psql(db, "-c", "CREATE TABLE seed_bodies (k BIGINT PRIMARY KEY, body TEXT, folded TEXT)")
        rows = "".join(f"{k}\t{b}\t{f}\n" for k, (b, f) in
                       ((k, bodies(k)) for k in range(1, ds.s["messages"] + 1)))
        psql(db, "-c", "COPY seed_bodies FROM STDIN", input=rows)
        text = with_bodies(text, "k.k")
    psql(db, *args, "-f", "-", input=text)
    if bodies:
        psql(db, "-c", "DROP TABLE seed_bodies")
    values = ",\n".join(f"('{i}', '{c}', '{h}', {at})" for i, c, h, at in token_rows(ds))
    psql(db, "-f", "-", input=f"INSERT INTO tokens (id, contact_id, token_hash, created_at) VALUES {values};")
    psql(db, "-c", "ANALYZE tokens")
    size = psql(db, "-c", f"SELECT pg_size_pretty(pg_database_size('{db}'))").strip()
    return url, time.time() - t0, size


def seed_sqlite(ds, path, bodies=None):
    """Seeds the SQLite file at `path`; `bodies` as for seed_postgres."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    sh([BIN, "migrate"], env=dict(os.environ, DATABASE_URL=f"sqlite://{path}", RUST_LOG="warn"))
    t0 = time.time()
    with open(os.path.join(BENCH, "seed_sqlite.sql")) as f:
        text = f.read()
    before, rest = text.split("-- messages\n")
    middle, after = rest.split("-- after\n")
    params = dict(ds.s, base=ds.base)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA synchronous = OFF")
    con.execute("PRAGMA cache_size = -1048576")

    def run(part):
        for stmt in re.split(r";\s*\n", part):
            lines = [l for l in stmt.splitlines() if not l.strip().startswith("--")]
            if "".join(lines).strip():
                con.execute("\n".join(lines), {k: v for k, v in params.items() if f":{k}" in stmt})

    con.execute("BEGIN")
    run(before)
    indexes = con.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL"
    ).fetchall()
    for name, _ in indexes:
        con.execute(f'DROP INDEX "{name}"')
    # The search index's triggers too (migration 2026-12-10-100000): one
    # rebuild of the FTS5 table after the rows, not an insert per row.
    triggers = con.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
    ).fetchall()
    for name, _ in triggers:
        con.execute(f'DROP TRIGGER "{name}"')
    if bodies:
        con.execute("CREATE TABLE seed_bodies (k INTEGER PRIMARY KEY, body TEXT, folded TEXT)")
        con.executemany("INSERT INTO seed_bodies VALUES (?, ?, ?)",
                        ((k, *bodies(k)) for k in range(1, ds.s["messages"] + 1)))
        middle = with_bodies(middle, "s.k")
    run(middle)
    if bodies:
        con.execute("DROP TABLE seed_bodies")
    for _, sql in indexes + triggers:
        con.execute(sql)
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages_search'").fetchone():
        con.execute("INSERT INTO messages_search (messages_search) VALUES ('rebuild')")
    con.executemany("INSERT INTO tokens (id, contact_id, token_hash, created_at) VALUES (?, ?, ?, ?)",
                    list(token_rows(ds)))
    run(after.replace("ANALYZE;", ""))
    con.execute("COMMIT")
    con.execute("ANALYZE")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return time.time() - t0, f"{os.path.getsize(path) / 2**20:.0f} MB"


# ---------------------------------------------------------------- scenarios


def perf_profile(server, targets_file, scenario, raw, per_connection=False):
    """System-wide profile during an extra (unmeasured) wrk run: the share of
    each process, then confab's and PostgreSQL's top symbols."""
    data = os.path.join(raw, f"perf-{scenario}.data")
    seconds = min(DURATION, 8)
    rec = subprocess.Popen(["perf", "record", "-F", "499", "-a", "-g", "-o", data, "--", "sleep", str(seconds)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_wrk(server, targets_file, seconds, os.path.join(raw, f"wrk-perf-{scenario}.txt"), per_connection)
    rec.wait()
    report = []
    # confab's threads carry the runtime's names: select them by pid.
    # Filtered reports in per cent of that process's own samples.
    reports = [["--sort", "comm"],
               ["--pid", str(server.proc.pid), "--percentage", "relative", "--sort", "dso,sym"]]
    if scenario.startswith("postgres"):
        reports.append(["--comm", "postgres", "--percentage", "relative", "--sort", "sym"])
    for args in reports:
        p = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none",
                            "--percent-limit", "1.5", *args], text=True, capture_output=True)
        lines = [l for l in p.stdout.splitlines() if l.strip() and not l.startswith("#")]
        label = " ".join("confab" if a == str(server.proc.pid) else a for a in args)
        report.append(f"perf report {label}:\n" + "\n".join(lines[:14]))
    text = "\n\n".join(report)
    with open(os.path.join(raw, f"perf-{scenario}.txt"), "w") as f:
        f.write(text + "\n")
    return text


def settle(store, db, url):
    """Starts every measured run (the server's and each pgbench run) with no
    checkpoint owed: the writes of a send or mixed run are checkpointed now,
    not spread over the next scenarios' runs (PostgreSQL's timed checkpoint
    wrote them through the following read scenarios, and its fsyncs stalled
    their requests, in the run at 08d653a), then a second's pause."""
    if store == "postgres":
        psql(db, "-c", "CHECKPOINT")
    else:
        con = sqlite3.connect(url.removeprefix("sqlite://"), isolation_level=None, timeout=30)
        con.execute("PRAGMA wal_checkpoint(PASSIVE)")
        con.close()
    out(["sync"])
    time.sleep(1)


def run_store(store, ds, raw, db=None, url=None, exact=None, least=None):
    targets = targets_for(ds)
    server = Server(url, os.path.join(raw, f"server-{store}.log"))
    results, profiles = {}, {}
    try:
        for scenario, _ in SCENARIOS:
            if ONLY and scenario not in ONLY:
                continue
            tfile = os.path.join(raw, f"targets-{store}-{scenario}.txt")
            write_targets(tfile, targets[scenario], scenario)
            per_connection = scenario in PER_CONNECTION
            raw_file = os.path.join(raw, f"{store}-{scenario}.txt")
            settle(store, db, url)
            log(f"{store} {scenario}: wrk {WARMUP}+{DURATION} s")
            if WARMUP:
                run_wrk(server, tfile, WARMUP, raw_file, per_connection)
            r = run_wrk(server, tfile, DURATION, raw_file, per_connection)
            r["rss_mb"] = server.hwm_kb() / 1024
            if store == "postgres":
                if exact and scenario in exact:
                    settle(store, db, url)
                    log(f"{store} {scenario}: pgbench exact")
                    r["exact"], r["exact_p99"] = run_pgbench(
                        db, [s[:3] for s in exact[scenario]], DURATION, raw_file)
                    r["statements"] = sum(s[3] * s[1] for s in exact[scenario]) / sum(
                        s[1] for s in exact[scenario])
                if least and scenario in least:
                    settle(store, db, url)
                    log(f"{store} {scenario}: pgbench least")
                    r["least"], r["least_p99"] = run_pgbench(db, least[scenario], DURATION, raw_file)
                if least and f"{scenario}:events" in least:
                    settle(store, db, url)
                    log(f"{store} {scenario}: pgbench least with events")
                    r["least_events"], _ = run_pgbench(
                        db, least[f"{scenario}:events"], DURATION, raw_file)
            results[scenario] = r
            log(f"{store} {scenario}: {json.dumps(r)}")
            if PERF and scenario in ("send", "page_first"):
                log(f"{store} {scenario}: perf record")
                profiles[f"{store} {scenario}"] = perf_profile(server, tfile, f"{store}-{scenario}", raw, per_connection)
    finally:
        server.stop()
    return results, profiles


# ------------------------------------------------------------------ the report


def fmt(v, spec=".0f"):
    return "n/a" if v is None else format(v, spec)


def ratio(a, b):
    return None if a is None or not b else a / b


def report(meta, pg, sqlite_res, profiles):
    lines = [
        f"Generated by `bench/run.sh` on {meta['date']}, commit `{meta['commit']}`.",
        f"Machine: {meta['nproc']} CPUs ({meta['cpu']}), {meta['mem']} RAM, {meta['pg']}; "
        f"load average at start {meta['load']}. Absolute figures move with whatever else the machine "
        "runs; the ratios within one run are what counts.",
        "",
        f"Load: wrk, {CONNECTIONS} connections, 2 threads, {WARMUP} s warm-up then {DURATION} s; "
        f"pgbench `-M prepared -c {CONNECTIONS} -j 2 -T {DURATION}` right after each wrk run. "
        "Requests pick at random among the same targets on both sides (per-request tokens, "
        "conversations and cursors; see bench/README.md); for send and mixed, wrk runs one "
        "thread per connection, each connection a client of one user as pgbench's clients are.",
        "",
    ]
    if pg:
        lines += [
            f"### PostgreSQL ({meta['pg_sizes']}; seeded in {meta['pg_seed']:.0f} s, {meta['pg_size']})",
            "",
            "| scenario | req/s | p50 ms | p99 ms | errors | SQL statements / request | pgbench exact tps "
            "| pgbench least tps | pgbench least p99 ms | confab / exact | confab / least | peak RSS MB |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for scenario, what in SCENARIOS:
            r = pg.get(scenario)
            if not r:
                continue
            lines.append(
                f"| {scenario}: {what} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['errors']} "
                f"| {fmt(r.get('statements'), '.1f')} | {fmt(r.get('exact'))} | {fmt(r.get('least'))} "
                f"| {fmt(r.get('least_p99'), '.1f')} "
                f"| {fmt(ratio(r['rps'], r.get('exact')), '.2f')} | {fmt(ratio(r['rps'], r.get('least')), '.2f')} "
                f"| {r['rss_mb']:.0f} |")
        lines.append("")
        r = pg.get("send")
        if r and r.get("least_events"):
            lines += [
                "The least SQL above is a send as the benchmark first set it: the token lookup and one "
                "membership-checked insert. Today a send does more: "
                "the sender's own count and the conversation's number, the `message.created` event and its recipients. "
                f"The same hand-written statement with those: **{r['least_events']:.0f} tps**; "
                f"confab / that: **{ratio(r['rps'], r['least_events']):.2f}**.",
                "",
            ]
    if sqlite_res:
        lines += [
            f"### SQLite ({meta['sqlite_sizes']}; seeded in {meta['sqlite_seed']:.0f} s, {meta['sqlite_size']})",
            "",
            "| scenario | req/s | p50 ms | p99 ms | errors | Rust peer req/s | confab / peer | peak RSS MB |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for scenario, what in SCENARIOS:
            r = sqlite_res.get(scenario)
            if not r:
                continue
            peer = PEER.get(scenario)
            lines.append(
                f"| {scenario}: {what} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {r['errors']} "
                f"| {fmt(peer)} | {fmt(ratio(r['rps'], peer), '.2f')} | {r['rss_mb']:.0f} |")
        lines.append("")
    lines += ["### Targets", "", "| target | figure | met |", "|---|---|---|"]

    def target(name, value, ok):
        lines.append(f"| {name} | {value} | {'n/a' if ok is None else ('yes' if ok else '**no**')} |")

    def rps(res, s):
        return res[s]["rps"] if s in res else None

    def at_least(v, bound):
        return None if v is None else v >= bound

    if pg:
        for s in ("send", "page_first"):
            rl = ratio(rps(pg, s), pg.get(s, {}).get("least"))
            target(f"PostgreSQL {s} >= 0.7x least SQL", fmt(rl, ".2f"), at_least(rl, 0.7))
        rl = ratio(rps(pg, "send"), pg.get("send", {}).get("least_events"))
        target("PostgreSQL send >= 0.7x least SQL with today's counters and event",
               fmt(rl, ".2f"), at_least(rl, 0.7))
        worst = max(pg.values(), key=lambda r: r["p99"])
        own = [r["least_p99"] for r in pg.values() if r.get("least_p99") is not None]
        alone = f" (pgbench's least SQL alone, worst: {max(own):.1f} ms)" if own else ""
        target("PostgreSQL p99 < 25 ms (worst scenario)", f"{worst['p99']:.1f} ms{alone}", worst["p99"] < 25)
        for a, b, k, name in (("page_deep", "page_first", 1.2, "deep page within 1.2x of the first"),
                              ("feed", "page_first", 1.5, "feed page within 1.5x of a one-conversation page")):
            slower = ratio(rps(pg, b), rps(pg, a))
            target(f"PostgreSQL {name} (time per page)", fmt(slower, ".2f") + "x",
                   None if slower is None else slower <= k)
        rss = max(r["rss_mb"] for r in pg.values())
        target("PostgreSQL peak RSS < 100 MB", f"{rss:.0f} MB", rss < 100)
        g = rps(pg, "get_message")
        target("PostgreSQL get message >= 0.5x peer (6,652 req/s)", fmt(g), at_least(g, PEER["get_message"] / 2))
    if sqlite_res:
        for s, k in (("page_first", 1.5), ("send", 3.0)):
            v = rps(sqlite_res, s)
            target(f"SQLite {s} >= {k}x peer ({PEER[s] * k:,.0f} req/s)", fmt(v), at_least(v, PEER[s] * k))
        g = rps(sqlite_res, "get_message")
        target("SQLite get message >= 0.5x peer (6,652 req/s)", fmt(g), at_least(g, PEER["get_message"] / 2))
        slower = ratio(rps(sqlite_res, "page_first"), rps(sqlite_res, "feed"))
        target("SQLite feed page within 1.5x of a one-conversation page (time per page)",
               fmt(slower, ".2f") + "x", None if slower is None else slower <= 1.5)
        worst = max(sqlite_res.values(), key=lambda r: r["p99"])
        target("SQLite p99 < 25 ms (worst scenario)", f"{worst['p99']:.1f} ms", worst["p99"] < 25)
        rss = max(r["rss_mb"] for r in sqlite_res.values())
        target("SQLite peak RSS < 100 MB", f"{rss:.0f} MB", rss < 100)
    lines.append("")
    if profiles:
        lines += ["### Profiles (perf, system-wide, during an extra run of the scenario)", ""]
        for scenario, text in profiles.items():
            lines += [f"{scenario}:", "", "```", text, "```", ""]
    # The raw directory is printed, not written here: it is a path of the
    # machine that ran the benchmark.
    return "\n".join(lines).rstrip("\n")


BEGIN = "<!-- bench:begin (generated by bench/run.sh; edit outside these markers) -->"
END = "<!-- bench:end -->"
SKELETON = f"""# Performance

How fast confab serves the benchmark's scenarios, measured by `bench/run.sh`
(see bench/README.md). The parts between the markers are rewritten by every
run; the rest is written by hand.

<!-- summary:begin (written by bench/chart.py from the run below; edit outside these markers) -->
<!-- summary:end -->

{BEGIN}
{END}
"""


def write_doc(text):
    doc = open(DOC).read() if os.path.exists(DOC) else SKELETON
    if BEGIN not in doc:
        doc = SKELETON + "\n" + doc
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(DOC, "w") as f:
        f.write(head + BEGIN + "\n" + text + "\n" + END + tail)


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = int(open("/proc/meminfo").readline().split()[1]) / 2**20
    except OSError:
        mem = 0
    commit = out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
    dirty = out(["git", "-C", ROOT, "status", "--porcelain", "--", "crates", "migrations", "Cargo.lock"]).strip()
    return dict(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        commit=commit + (" (with uncommitted changes)" if dirty else ""),
        nproc=os.cpu_count(),
        cpu=cpu,
        mem=f"{mem:.0f} GiB",
        load=open("/proc/loadavg").read().split()[0],
    )


def sizes_text(s):
    return (f"{s['contacts']:,} contacts, {s['convs']:,} conversations, {s['messages']:,} messages, "
            f"one conversation of {s['big']:,}, one contact with {s['inbox']} conversations")


def main():
    for tool in ("wrk", "pgbench", "psql"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (see bench/README.md)")
    if os.environ.get("BENCH_NO_BUILD") != "1" and not os.environ.get("BENCH_BIN"):
        log("cargo build --release -p confab-server")
        sh(["cargo", "build", "--release", "-p", "confab-server"], cwd=ROOT)
    raw = tempfile.mkdtemp(prefix="confab-bench-")
    log(f"raw outputs in {raw}")
    meta = machine()
    meta["raw"] = raw
    base = (time.time_ns() // 1000) - SIZES[SCALE]["messages"] * 1000 - 3_600_000_000
    pg, sqlite_res, profiles = None, None, {}
    if "postgres" in STORES:
        ds = DataSet(SIZES[SCALE], base)
        db = f"confab_bench_{os.getpid()}"
        meta["pg"] = psql("postgres", "-c", "SHOW server_version").strip().split()[0]
        meta["pg"] = f"PostgreSQL {meta['pg']}"
        try:
            log(f"seeding PostgreSQL database {db} ({sizes_text(ds.s)})")
            url, meta["pg_seed"], meta["pg_size"] = seed_postgres(ds, db, raw)
            meta["pg_sizes"] = sizes_text(ds.s)
            log(f"seeded in {meta['pg_seed']:.0f} s ({meta['pg_size']})")
            targets = targets_for(ds)
            least = least_scripts(ds, targets, raw)
            exact = capture(ds, db, targets, raw)
            for scripts in list(least.values()) + list(exact.values()):
                check_scripts(db, scripts, raw)
            pg, profiles = run_store("postgres", ds, raw, db=db, url=url, exact=exact, least=least)
        finally:
            if os.environ.get("BENCH_KEEP_DB") != "1":
                psql("postgres", "-c", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    else:
        meta["pg"] = "PostgreSQL not run"
    if "sqlite" in STORES:
        try:
            sqlite_res = sqlite_run(base, raw, meta)
        except Exception as e:  # noqa: BLE001 - the PostgreSQL results still get written
            log(f"the SQLite run failed: {e!r}")
    profiles.update(meta.pop("sqlite_profiles", {}))
    text = report(meta, pg, sqlite_res, profiles)
    with open(os.path.join(raw, "report.md"), "w") as f:
        f.write(text + "\n")
    if os.environ.get("BENCH_WRITE_DOC", "1") == "1":
        write_doc(text)
        log(f"wrote {DOC}")
        # The first screen: a table per store and docs/performance.svg.
        sh([sys.executable, os.path.join(BENCH, "chart.py")])
    print(text)
    log(f"raw outputs in {raw}")


def sqlite_run(base, raw, meta):
    path = os.path.join(raw, "bench.db")
    try:
        ds = DataSet(SIZES[SQLITE_SCALE], base)
        log(f"seeding SQLite {path} ({sizes_text(ds.s)})")
        meta["sqlite_seed"], meta["sqlite_size"] = seed_sqlite(ds, path)
        meta["sqlite_sizes"] = sizes_text(ds.s)
        log(f"seeded in {meta['sqlite_seed']:.0f} s ({meta['sqlite_size']})")
        results, profiles = run_store("sqlite", ds, raw, url=f"sqlite://{path}")
        meta["sqlite_profiles"] = profiles
        return results
    finally:
        if os.environ.get("BENCH_KEEP_DB") != "1":
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)


if __name__ == "__main__":
    main()
