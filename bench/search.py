#!/usr/bin/env python3
"""Search under load (docs/api.md "Search messages"). Run through bench/search.sh.

On each store: the benchmark's seed (bench.py) at 1,000,000 messages over
10,000 conversations, whose contact 1 is in 50 conversations (one of them,
conversation 1, holds BIG = 10,000 messages: 1 % of all), every message
"Lorem ipsum dolor sit amet, consectetur adipiscing, message <k>". Then,
with wrk at 8 connections from a second process, GET /v1/messages/search
as contact 1 for:

- common: "lorem", in every message of every conversation;
- rare: the number of one message of a conversation of contact 1 (the
  digits of a few other messages contain it too);
- none: "qwerty", in no message;
- none_common_trigrams (reported, not a target): "dolorem", made of
  trigrams every message has, found in none: what a trigram index cannot
  narrow.

Each answer is checked first (count and order against the seed's rule).
Then sends (POST /v1/messages, 8 connections, users 101-132 to their own
conversations) with the search index and without it (PostgreSQL: the GIN
index dropped; SQLite: the FTS5 table and its triggers dropped), alternated
ROUNDS times, the index rebuilt in between: their ratio is the cost of
keeping the index on a send.

BENCH_SEED=real (the default) seeds real-like text instead (bench/realtext.py:
a vocabulary of 6,000 words and 300 names with Zipf-like frequencies, 3 to
12 words a message, some numbers) and searches for the commonest word, a
word of rank 3,000 (rare: a few of the searcher's messages), a name of
middle rank and a word of the same making found nowhere (none), each
checked against the texts; BENCH_SEED=repeated keeps the sentence above.
Both print the database's bytes per message and what the search index
takes of them.

Knobs: BENCH_STORES, BENCH_DURATION and BENCH_SEND_DURATION (15 s),
BENCH_ROUNDS (2), BENCH_WARMUPS (4 send runs first), BENCH_SENDS_ONLY=1 (sends only),
BENCH_SEARCH_ONLY=1 (searches only: also for a binary older than the
SQLite backlog, which the index's rebuild here expects), BENCH_WITHOUT_FIRST=1
(each round starts without the index), BENCH_SEND_TEXT=varied
(each user's sends pick among 64 texts of mixed words instead of one
text), BENCH_GIN_OPTIONS (storage parameters for the PostgreSQL index,
say "fastupdate = off"), BENCH_KEEP_DB=1, and the sizes (BENCH_MESSAGES,
BENCH_CONVS, BENCH_CONTACTS, BENCH_BIG).

Prints a table and exits 1 when a target is missed: p99 < 50 ms for
common, rare and none; sends with the index >= 0.9x without.

Standard library only; reuses bench.py (the seed, the server, wrk).
"""

import json
import os
import re
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as b  # noqa: E402

b.CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "8"))
# One contact searches on every connection: its limit of searches at once
# (2 by default, docs/api.md "Hostile load") is raised to them, so that the
# benchmark measures the index and not that limit. The searches' share of
# connections stays the server's default unless BENCH_SEARCH_CONNECTIONS.
os.environ.setdefault("CONFAB_MAX_SEARCHES_PER_CONTACT", str(b.CONNECTIONS))
if os.environ.get("BENCH_SEARCH_CONNECTIONS"):
    os.environ["CONFAB_SEARCH_CONNECTIONS"] = os.environ["BENCH_SEARCH_CONNECTIONS"]
SIZES = dict(
    contacts=int(os.environ.get("BENCH_CONTACTS", "2000")),
    convs=int(os.environ.get("BENCH_CONVS", "10000")),
    messages=int(os.environ.get("BENCH_MESSAGES", "1000000")),
    big=int(os.environ.get("BENCH_BIG", "10000")),
    inbox=50,
)
DURATION = int(os.environ.get("BENCH_DURATION", "15"))
SEND_DURATION = int(os.environ.get("BENCH_SEND_DURATION", "15"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
WARMUPS = int(os.environ.get("BENCH_WARMUPS", "4"))
STORES = os.environ.get("BENCH_STORES", "postgres sqlite").split()
MAX_P99_MS = float(os.environ.get("MAX_P99_MS", "50"))
MIN_SEND_RATIO = float(os.environ.get("MIN_SEND_RATIO", "0.9"))
SEARCHER = 1


SEED = os.environ.get("BENCH_SEED", "real")
if SEED not in ("real", "repeated"):
    raise SystemExit("BENCH_SEED is real or repeated")
# The kinds of term measured, each with a p99 target but the last.
KINDS = ("common", "rare", "name", "none", "none_common_trigrams")

_real_bodies = []


def body_of(k):
    """Message k's folded text."""
    if SEED == "repeated":
        return f"lorem ipsum dolor sit amet, consectetur adipiscing, message {k}"
    if not _real_bodies:
        import realtext
        _real_bodies.append(None)
        _real_bodies.extend(realtext.body(i) for i in range(1, SIZES["messages"] + 1))
    return _real_bodies[k].lower()


def seed_bodies():
    """The seed's `bodies` hook: None for the repeated sentence."""
    if SEED == "repeated":
        return None
    body_of(1)
    return lambda k: (_real_bodies[k], _real_bodies[k].lower())


def rare_message(ds):
    """A message of an ordinary conversation of contact 1: its number is the
    rare term (conversation 2, contact 1's)."""
    return ds.last_message_of(2)


def expected_count(term, s):
    """How many of contact 1's messages have `term` (folded), by the seed's
    layout (bench.DataSet, seed_*.sql)."""
    m, v, big, inbox = s["messages"], s["convs"], s["big"], s["inbox"]
    ratio = m // big
    n = 0
    for k in range(1, m + 1):
        conv = 1 if k % ratio == 0 else 2 + (k % (v - 1))
        if conv <= inbox and term in body_of(k):
            n += 1
    return n


def search_path(term, limit=10):
    return "/v1/messages/search?" + urllib.parse.urlencode({"query": term, "limit": limit})


def get(server, path, user=SEARCHER):
    """The answer's JSON; a 429 (searches of a wrk run still answering
    after it stopped count against the contact's limit) is waited out."""
    req = urllib.request.Request(server.url + path,
                                 headers={"Authorization": f"Bearer {b.DataSet.token(user)}"})
    for _ in range(30):
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code != 429:
                raise
            time.sleep(1)
    raise SystemExit(f"{path}: 429 for 30 s")


def check(server, term, want):
    """Pages through the search, checks count and order; returns the count."""
    seen, cursor = [], None
    while True:
        path = search_path(term, 100) + (f"&starting_after={cursor}" if cursor else "")
        page = get(server, path)
        seen += page["data"]
        if not page["has_more"]:
            break
        cursor = page["data"][-1]["id"]
    keys = [(m["created_at"], m["id"]) for m in seen]
    if keys != sorted(keys, reverse=True):
        raise SystemExit(f"{term!r}: not newest first")
    if any(term.lower() not in m["message"].lower() for m in seen):
        raise SystemExit(f"{term!r}: a message without the term")
    if want is not None and len(seen) != want:
        raise SystemExit(f"{term!r}: {len(seen)} found, {want} expected")
    return len(seen)


def wrk_get(server, term, raw):
    path = os.path.join(raw, f"targets-search-{abs(hash(term))}.txt")
    with open(path, "w") as f:
        f.write(f"GET\t{search_path(term)}\t-\t{b.DataSet.token(SEARCHER)}\t1\n")
    return b.run_wrk(server, path, DURATION, os.path.join(raw, "wrk.txt"))


# Words for the sends' texts (BENCH_SEND_TEXT=varied): real messages do
# not all share one text, and with one text every send adds its row to the
# same few trigrams' entries of the index.
WORDS = ("apple river quantum silver meeting tomorrow budget kitten orange window "
         "planet coffee mountain yellow dinner report garden travel hockey violin "
         "zebra jacket museum pencil rocket sunset thunder velvet wizard yogurt").split()


def send_targets(ds):
    targets = b.targets_for(ds)["send"]
    if os.environ.get("BENCH_SEND_TEXT", "same") != "varied":
        return targets
    out = []
    for i, t in enumerate(targets):
        for j in range(64):
            words = " ".join(WORDS[(i * 7 + j * 13 + n * 5) % len(WORDS)] for n in range(6))
            text = f"{words} {i * 64 + j}".replace(" ", "+")
            out.append(dict(t, body=f"conversation_id={t['conv']}&message={text}"))
    return out


def wrk_send(server, ds, raw):
    """Each connection sends as one user, to their own conversation (so that
    two sends of one user never run at once), picking among that user's
    texts."""
    path = os.path.join(raw, "targets-send.txt")
    with open(path, "w") as f:
        for t in send_targets(ds):
            f.write(f"{t['method']}\t{t['path']}\t{t['body']}\t{b.DataSet.token(t['user'])}\t{t['user']}\n")
    return b.run_wrk(server, path, SEND_DURATION, os.path.join(raw, "wrk.txt"), per_connection=True)


class PgIndex:
    def __init__(self, db):
        self.db = db
        self.definition = b.psql(db, "-c", "SELECT indexdef FROM pg_indexes "
                                 "WHERE indexname = 'messages_body_trgm_idx'").strip()
        if not self.definition:
            raise SystemExit("no messages_body_trgm_idx: is the binary's schema current?")
        # An experiment's storage parameters for the index (say
        # "fastupdate = off"), applied to the seeded index and each rebuild.
        options = os.environ.get("BENCH_GIN_OPTIONS")
        if options:
            self.definition += f" WITH ({options})"
            self.drop()
            self.create()

    def drop(self):
        b.psql(self.db, "-c", "DROP INDEX messages_body_trgm_idx")

    def create(self):
        b.psql(self.db, "-c", "SET maintenance_work_mem = '512MB'", "-c", self.definition)
        self.settle()

    def settle(self):
        """Vacuumed, and the build's WAL checkpointed: the next run does not
        pay for what came before it."""
        b.psql(self.db, "-c", "VACUUM ANALYZE messages")
        b.psql(self.db, "-c", "CHECKPOINT")


class SqliteIndex:
    def __init__(self, path):
        import sqlite3
        self.path = path
        con = sqlite3.connect(path)
        self.schema = con.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name = 'messages_search' "
            "OR (type = 'trigger' AND name LIKE 'messages_search_%') ORDER BY type DESC").fetchall()
        con.close()
        if len(self.schema) != 4:
            raise SystemExit("no messages_search table and triggers: is the binary's schema current?")

    def _run(self, statements):
        import sqlite3
        con = sqlite3.connect(self.path, isolation_level=None, timeout=60)
        for s in statements:
            con.execute(s)
        con.close()

    def drop(self):
        self._run([f"DROP TRIGGER {name}" for kind, name, _ in self.schema if kind == "trigger"]
                  + ["DROP TABLE messages_search"])

    def create(self):
        # The rebuild indexes every message: what a run before left in the
        # backlog (migration 2026-12-11-100000) must not be indexed again.
        self._run([sql for _, _, sql in self.schema]
                  + ["DELETE FROM messages_search_backlog",
                     "INSERT INTO messages_search (messages_search) VALUES ('rebuild')"])
        self.settle()

    def settle(self):
        self._run(["PRAGMA wal_checkpoint(TRUNCATE)"])


def disk_use(store, db, path):
    """The database's bytes per message, and the search index's share."""
    n = SIZES["messages"]
    if store == "postgres":
        total, index = (int(x) for x in b.psql(
            db, "-c", "SELECT pg_database_size(current_database()), "
            "pg_relation_size('messages_body_trgm_idx')").strip().split("|"))
    else:
        import sqlite3
        con = sqlite3.connect(path)
        total = os.path.getsize(path)
        index = con.execute("SELECT COALESCE(SUM(pgsize), 0) FROM dbstat "
                            "WHERE name LIKE 'messages_search%'").fetchone()[0]
        con.close()
    return dict(per_message=total / n, index_per_message=index / n, total=total, index=index)


def run_store(store, raw):
    base = (time.time_ns() // 1000) - SIZES["messages"] * 1000 - 3_600_000_000
    ds = b.DataSet(SIZES, base)
    db = f"confab_bench_search_{os.getpid()}"
    path = os.path.join(raw, "search.db")
    try:
        b.log(f"{store}: seeding ({b.sizes_text(SIZES)})")
        if store == "postgres":
            url, secs, size = b.seed_postgres(ds, db, raw, bodies=seed_bodies())
            b.psql(db, "-c", "VACUUM ANALYZE messages")
            index = PgIndex(db)
        else:
            url = f"sqlite://{path}"
            secs, size = b.seed_sqlite(ds, path, bodies=seed_bodies())
            index = SqliteIndex(path)
        b.log(f"{store}: seeded in {secs:.0f} s ({size})")
        server = b.Server(url, os.path.join(raw, f"server-{store}.log"))
        try:
            if SEED == "repeated":
                rare = str(rare_message(ds))
                terms = [("common", "lorem", None), ("rare", rare, None), ("none", "qwerty", 0),
                         ("none_common_trigrams", "dolorem", 0)]
            else:
                import realtext
                terms = [(kind, term, None) for kind, term in realtext.terms()]
            res = {"bytes": disk_use(store, db, path)}
            b.log(f"{store}: {res['bytes']}")
            if os.environ.get("BENCH_SENDS_ONLY") == "1":
                terms = []
            for kind, term, want in terms:
                if kind != "common" and want is None:
                    want = expected_count(term, SIZES)
                found = check(server, term, want) if kind != "common" else None
                if kind == "common":
                    page = get(server, search_path(term))
                    if len(page["data"]) != 10 or not page["has_more"]:
                        raise SystemExit("common: not a full page")
                b.log(f"{store}: {kind} ({term!r}) checked; wrk {DURATION} s")
                r = wrk_get(server, term, raw)
                if r["errors"] and kind != "none_common_trigrams":
                    raise SystemExit(f"{store} {kind}: {r['errors']} errors")
                res[kind] = dict(term=term, found=found, **r)
            if os.environ.get("BENCH_SEARCH_ONLY") == "1":
                return res
            sends = {"with": [], "without": []}
            # BENCH_WITHOUT_FIRST=1: the warm-up and each round start without
            # the index, to tell a slow first run from the index's cost.
            order = ("with", "without")
            present = True
            if os.environ.get("BENCH_WITHOUT_FIRST") == "1":
                order = ("without", "with")
                index.drop()
                present = False
            # Warmed up, the searches' and the seed's work behind: on
            # PostgreSQL the first 30-45 s of sends after the seed ran at a
            # third of the later rate, index or not (BENCH_WITHOUT_FIRST=1
            # showed it), so that a first measured round paid for the seed.
            index.settle()
            for _ in range(WARMUPS):
                warm = wrk_send(server, ds, raw)
                b.log(f"{store}: warm-up sends ({'with' if present else 'without'} the index): "
                      f"{warm['rps']:.0f}/s")
            for rnd in range(ROUNDS):
                for state in order:
                    if state == "without" and present:
                        index.drop()
                        present = False
                    elif state == "with" and not present:
                        index.create()
                        present = True
                    r = wrk_send(server, ds, raw)
                    b.log(f"{store}: sends {state} the index, round {rnd + 1}: {r['rps']:.0f}/s")
                    if r["errors"]:
                        raise SystemExit(f"{store} sends: {r['errors']} errors")
                    sends[state].append(r["rps"])
            if not present:
                index.create()
            res["sends"] = sends
            return res
        finally:
            server.stop()
    finally:
        if os.environ.get("BENCH_KEEP_DB") != "1":
            if store == "postgres":
                b.psql("postgres", "-c", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)


def main():
    b.BIN = os.environ.get("BENCH_BIN") or b.BIN
    raw = tempfile.mkdtemp(prefix="confab-search-bench-")
    b.log(f"raw outputs in {raw}; binary {b.BIN}")
    results, failed = {}, []
    for store in STORES:
        results[store] = run_store(store, raw)
    lines = [f"{b.sizes_text(SIZES)}, seed {SEED}; searcher: contact 1 (50 conversations); wrk "
             f"{b.CONNECTIONS} connections, {DURATION} s per term",
             "",
             "| store | term | query | found | req/s | p50 ms | p99 ms | errors | target |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for store, res in results.items():
        for kind in KINDS:
            if kind not in res:
                continue
            r = res[kind]
            target = "reported"
            if kind != "none_common_trigrams":
                ok = r["p99"] < MAX_P99_MS
                target = f"p99 < {MAX_P99_MS:.0f} ms: {'yes' if ok else 'NO'}"
                if not ok:
                    failed.append(f"{store} {kind} p99 {r['p99']:.1f} ms")
            found = "10+" if r["found"] is None else r["found"]
            lines.append(f"| {store} | {kind} | `{r['term']}` | {found} | {r['rps']:.0f} | "
                         f"{r['p50']:.1f} | {r['p99']:.1f} | {r['errors']} | {target} |")
    lines += ["", "| store | bytes per message | of them the search index | database | index |",
              "|---|---:|---:|---:|---:|"]
    for store, res in results.items():
        d = res["bytes"]
        lines.append(f"| {store} | {d['per_message']:.0f} | {d['index_per_message']:.0f} | "
                     f"{d['total'] / 2**20:.0f} MiB | {d['index'] / 2**20:.0f} MiB |")
    lines += ["", "| store | sends/s with the index | without | with / without | target |",
              "|---|---|---|---:|---|"]
    for store, res in results.items():
        if "sends" not in res:
            continue
        w, wo = res["sends"]["with"], res["sends"]["without"]
        ratio = sum(w) / sum(wo)
        ok = ratio >= MIN_SEND_RATIO
        if not ok:
            failed.append(f"{store} sends {ratio:.2f}x")
        lines.append(f"| {store} | {' / '.join(f'{x:.0f}' for x in w)} | "
                     f"{' / '.join(f'{x:.0f}' for x in wo)} | {ratio:.2f} | "
                     f">= {MIN_SEND_RATIO}: {'yes' if ok else 'NO'} |")
    text = "\n".join(lines)
    with open(os.path.join(raw, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    b.log(f"raw outputs in {raw}")
    if failed:
        print("missed: " + "; ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
