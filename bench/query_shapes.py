#!/usr/bin/env python3
"""The page and feed query shapes, before and after, on databases seeded by
bench/run.sh (see bench/README.md, "Query shapes"). Standard library only.

    BENCH_KEEP_DB=1 bench/run.sh     # keeps confab_bench_<pid> and <raw>/bench.db
    python3 bench/query_shapes.py --pg confab_bench_<pid> --sqlite <raw>/bench.db

PostgreSQL: pgbench (`-M prepared`: parameters and plan caching as the
server has them) on the statements the server sends for a first page and for
a page deep in the 1,000,000-message conversation, before
(`query_shapes/old_*.sql`, captured from main at fcb9679 with
`log_statement=all`) and after (`new_*.sql`), over the targets of the
`page_first` / `page_deep` scenarios (the viewer and the cursor picked per
transaction with one more small statement, `\\gset`, the same for both); then
`EXPLAIN (ANALYZE, BUFFERS)` of each, with the generic plan (what a cached
statement gets once PostgreSQL prefers it) and with a custom one.

SQLite: the median time of the feed and page statements, before and after,
on one connection with SQLite's default page cache (Python's sqlite3: its
SQLite may be older than the server's bundled one), and `EXPLAIN QUERY PLAN`.
The SQLite statements are transcribed from the queries, not captured.
"""

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "query_shapes")

# Each statement's parameters, by name ($1, $2, ...).
PARAMS = {
    "old_first": ["viewer"] * 3 + ["conv", "conv", "lim"],
    "old_deep": ["viewer"] * 3 + ["conv", "conv"] + ["cursor", "conv", "one"] * 3 + ["cursor", "lim"],
    "new_first": ["conv"] + ["viewer"] * 3 + ["one", "lim"],
    "new_deep": ["conv"] + ["viewer"] * 3 + ["one", "conv", "cursor", "one", "cursor", "lim"],
}
TYPES = {"viewer": "uuid", "conv": "uuid", "cursor": "uuid", "one": "bigint", "lim": "bigint"}


def statement(name):
    with open(os.path.join(HERE, f"{name}.sql")) as f:
        return "".join(l for l in f if not l.startswith("--")).strip().rstrip(";")


def data_set(base_of, scale):
    return bench.DataSet(bench.SIZES[scale], base_of)


def targets(ds):
    big = ds.s["big"]
    return [(n, ds.contact(1 + n % 2), ds.conv(1), ds.deep_cursor(big // 2 + n * (big * 49 // 100) // 31))
            for n in range(32)]


def psql(db, sql):
    return bench.out(["psql", "-h", bench.PG_HOST, "-p", bench.PG_PORT, "-U", bench.PG_USER, "-d", db,
                      "-v", "ON_ERROR_STOP=1", "-X", "-q", "-f", "-"], input=sql)


def postgres(db, seconds, clients):
    base = int(psql(db, "\\pset tuples_only on\n\\pset format unaligned\n"
                        "SELECT min(created_at) - 1000 FROM messages;").strip())
    rows = targets(data_set(base, "full"))
    psql(db, "DROP TABLE IF EXISTS bench_page_targets;\n"
             "CREATE TABLE bench_page_targets (n int PRIMARY KEY, viewer uuid, conv uuid, cursor uuid);\n"
             "INSERT INTO bench_page_targets VALUES "
             + ", ".join(f"({n}, '{v}', '{c}', '{k}')" for n, v, c, k in rows) + ";\nANALYZE bench_page_targets;\n")
    tmp = tempfile.mkdtemp(prefix="confab-query-shapes-")
    print(f"## PostgreSQL ({db}), pgbench -M prepared -c {clients} -j 2 -T {seconds}\n")
    print("| statement | tps | latency ms |")
    print("|---|---:|---:|")
    for name in ("old_first", "new_first", "old_deep", "new_deep"):
        params = PARAMS[name]
        body = re.sub(r"\$(\d+)\b", lambda m: ":" + params[int(m.group(1)) - 1], statement(name))
        path = os.path.join(tmp, f"{name}.pgb")
        with open(path, "w") as f:
            f.write("\\set n random(0, 31)\n\\set one 1\n\\set lim 11\n"
                    "SELECT viewer, conv, cursor FROM bench_page_targets WHERE n = :n \\gset\n"
                    f"{body};\n")
        p = subprocess.run(["pgbench", "-h", bench.PG_HOST, "-p", bench.PG_PORT, "-U", bench.PG_USER, "-n",
                            "-M", "prepared", f"-c{clients}", "-j2", f"-T{seconds}", "-f", path, db],
                           text=True, capture_output=True)
        tps = re.search(r"tps = ([\d.]+)", p.stdout)
        lat = re.search(r"latency average = ([\d.]+) ms", p.stdout)
        if p.returncode != 0 or not tps:
            sys.exit(f"pgbench {name} failed:\n{p.stdout}{p.stderr}")
        print(f"| {name} | {float(tps.group(1)):.0f} | {float(lat.group(1)):.1f} |")
    print()
    n, viewer, conv, cursor = rows[5]
    values = {"viewer": f"'{viewer}'", "conv": f"'{conv}'", "cursor": f"'{cursor}'", "one": "1", "lim": "11"}
    for mode in ("force_generic_plan", "force_custom_plan"):
        for name in ("old_first", "new_first", "old_deep", "new_deep"):
            params = PARAMS[name]
            text = psql(db, f"SET plan_cache_mode = {mode};\n"
                            f"PREPARE q ({', '.join(TYPES[p] for p in params)}) AS {statement(name)};\n"
                            f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE q ({', '.join(values[p] for p in params)});\n")
            keep = [l for l in text.splitlines()
                    if re.search(r"Scan|Index Cond|Rows Removed|Execution Time|InitPlan|Limit|Sort", l)
                    or (l.strip().startswith("Buffers") and l.startswith(" "))]
            print(f"{mode}, {name}:\n```\n" + "\n".join(keep) + "\n```\n")


# ------------------------------------------------------------------- SQLite

VISIBLE = ("SELECT conversations.id FROM conversations WHERE ((conversations.group_id IS NULL "
           "AND (conversations.creator_id = ? OR conversations.peer_id = ?)) "
           "OR conversations.group_id IN (SELECT group_members.group_id FROM group_members "
           "WHERE group_members.contact_id = ?))")
SELECT = ("SELECT messages.id, messages.conversation_id, messages.sender_id, messages.body, messages.read_at, "
          "messages.created_at, messages.updated_at, contacts.id, contacts.username, contacts.username_folded, "
          "contacts.phone_number, contacts.avatar_url, contacts.last_active_at, contacts.created_at "
          "FROM messages INNER JOIN contacts ON contacts.id = messages.sender_id")
DESC = " ORDER BY messages.created_at DESC, messages.id DESC LIMIT ?"


def old_feed(v, cursor):
    """The shared query before: the viewer's conversations as a list."""
    if not cursor:
        return f"{SELECT} WHERE messages.conversation_id IN ({VISIBLE}){DESC}", [v] * 3 + [11]
    key = ("(SELECT cursor_message.created_at FROM messages AS cursor_message WHERE cursor_message.id = ? "
           f"AND cursor_message.conversation_id IN ({VISIBLE}) LIMIT ?)")
    return (f"{SELECT} WHERE messages.conversation_id IN ({VISIBLE}) AND messages.created_at <= {key} "
            f"AND (messages.created_at < {key} OR (messages.created_at = {key} AND messages.id < ?)){DESC}",
            [v] * 3 + [cursor] + [v] * 3 + [1] + ([cursor] + [v] * 3 + [1]) * 2 + [cursor, 11])


def new_feed(v, cursor, fetch=11):
    """`feed_page` in crates/store-sql/per-backend/queries/messages.rs."""
    past = ("AND ({a}.created_at, {a}.id) < (SELECT at, id FROM cursor_key)" if cursor else "")
    sql = (f"{SELECT} WHERE messages.id IN (WITH mine (id) AS ( "
           "SELECT id FROM conversations WHERE group_id IS NULL AND creator_id = ? "
           "UNION SELECT id FROM conversations WHERE peer_id = ? "
           "UNION SELECT c.id FROM group_members g CROSS JOIN conversations c "
           "WHERE c.group_id = g.group_id AND g.contact_id = ?), "
           "cursor_key (at, id) AS MATERIALIZED (SELECT created_at, id FROM messages WHERE id = ? "
           "AND conversation_id IN (SELECT id FROM mine)), "
           "heads (conversation_id, at) AS MATERIALIZED (SELECT mine.id, (SELECT h.created_at FROM messages h "
           f"WHERE h.conversation_id = mine.id {past.format(a='h')} "
           "ORDER BY h.created_at DESC, h.id DESC LIMIT 1) FROM mine), "
           "bound (at) AS (SELECT COALESCE((SELECT at FROM heads WHERE at IS NOT NULL "
           "ORDER BY at DESC LIMIT 1 OFFSET ?), ?)) "
           "SELECT k.id FROM heads JOIN messages k ON k.id IN (SELECT i.id FROM messages i "
           "WHERE i.conversation_id = heads.conversation_id AND i.created_at >= (SELECT at FROM bound) "
           f"{past.format(a='i')} ORDER BY i.created_at DESC, i.id DESC LIMIT ?) "
           "WHERE heads.at >= (SELECT at FROM bound) ORDER BY k.created_at DESC, k.id DESC LIMIT ?)"
           + DESC)
    return sql, [v] * 3 + [cursor, fetch - 1, -2**63, fetch, fetch, fetch]


def old_page(v, c, cursor):
    where = f"messages.conversation_id IN ({VISIBLE} AND conversations.id = ?) AND messages.conversation_id = ?"
    if not cursor:
        return f"{SELECT} WHERE {where}{DESC}", [v] * 3 + [c, c, 11]
    key = ("(SELECT cursor_message.created_at FROM messages AS cursor_message WHERE cursor_message.id = ? "
           "AND cursor_message.conversation_id = ? LIMIT ?)")
    return (f"{SELECT} WHERE {where} AND messages.created_at <= {key} AND (messages.created_at < {key} "
            f"OR (messages.created_at = {key} AND messages.id < ?)){DESC}",
            [v] * 3 + [c, c] + [cursor, c, 1] * 3 + [cursor, 11])


def new_page(v, c, cursor):
    where = f"messages.conversation_id = (SELECT conversations.id FROM conversations WHERE conversations.id = ? " \
            f"AND {VISIBLE.split(' WHERE ', 1)[1]} LIMIT ?)"
    if not cursor:
        return f"{SELECT} WHERE {where}{DESC}", [c] + [v] * 3 + [1, 11]
    key = ("(SELECT CASE WHEN cursor_message.conversation_id = ? THEN cursor_message.created_at END "
           "FROM messages AS cursor_message WHERE cursor_message.id = ? LIMIT ?)")
    return (f"{SELECT} WHERE {where} AND (messages.created_at, messages.id) < ({key}, ?){DESC}",
            [c] + [v] * 3 + [1, c, cursor, 1, cursor, 11])


def sqlite(path, scale, runs):
    con = sqlite3.connect(path)
    base = con.execute("SELECT min(created_at) - 1000 FROM messages").fetchone()[0]
    rows = targets(data_set(base, scale))
    _, viewer, conv, cursor = rows[5]
    print(f"## SQLite ({path}, SQLite {sqlite3.sqlite_version}), median of {runs} runs "
          "(3 for the old feed)\n")
    print("| statement | first page ms | deep page ms |")
    print("|---|---:|---:|")
    results = {}
    for name, make in (("old page", lambda k: old_page(viewer, conv, k)),
                       ("new page", lambda k: new_page(viewer, conv, k)),
                       ("old feed", lambda k: old_feed(viewer, k)),
                       ("new feed", lambda k: new_feed(viewer, k))):
        cells = []
        for k in (None, cursor):
            sql, args = make(k)
            times = []
            for _ in range(3 if name == "old feed" else runs):
                t0 = time.perf_counter()
                got = con.execute(sql, args).fetchall()
                times.append(time.perf_counter() - t0)
            results[(name, k)] = [r[0] for r in got]
            cells.append(f"{statistics.median(times) * 1000:.2f}")
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    for what in ("page", "feed"):
        for k in (None, cursor):
            if results[(f"old {what}", k)] != results[(f"new {what}", k)]:
                sys.exit(f"the old and new {what} differ (cursor {k})")
    print()
    for name, (sql, args) in (("new feed, deep", new_feed(viewer, cursor)),
                              ("new page, deep", new_page(viewer, conv, cursor))):
        plan = con.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
        print(f"EXPLAIN QUERY PLAN, {name}:\n```\n" + "\n".join(r[3] for r in plan) + "\n```\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pg", help="a PostgreSQL database seeded at full scale")
    ap.add_argument("--sqlite", help="an SQLite file seeded by bench/run.sh")
    ap.add_argument("--sqlite-scale", default="fifth", choices=sorted(bench.SIZES))
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    if not a.pg and not a.sqlite:
        ap.error("give --pg, --sqlite or both")
    if a.pg:
        postgres(a.pg, a.seconds, a.clients)
    if a.sqlite:
        sqlite(a.sqlite, a.sqlite_scale, a.runs)


if __name__ == "__main__":
    main()
