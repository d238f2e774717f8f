"""Read replicas (CONFAB_REPLICA_DATABASE_URLS): reads come from the
streaming replica, every client reads its own writes (Confab-Read-After),
a stopped or lagging replica costs no failed or stale request, and the lag
is a metric. Two instances behind HAProxy on the private primary, the
replica made by tests/topology/pg.sh.

Whether a read was served by the replica is read from the replica's own
statistics (scans of `messages`, which replay never counts): nothing else
reads from it."""

import threading
import time

from harness import ms, percentile, psql

READS = 40
MAX_LAG_MS = 1000


def _scans(ctx, db_name):
    return ctx.replica_stats(db_name)["messages_idx_scan"]


def _primary_scans(ctx, db_name):
    return int(psql(ctx.primary, "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_tables WHERE relname = 'messages'",
                    db=db_name))


# A PostgreSQL 15 backend flushes its statistics at the end of a
# transaction at most once a second; what it counts within a second of its
# last flush waits until it is idle for 10 s (or its next transaction a
# second on). So a burst of reads shows whole only some 10 s later.
STATS_SETTLE = 12.0


def _settled(fn, at_least, timeout=STATS_SETTLE):
    """fn() polled until it reaches at_least, for at most timeout."""
    deadline = time.monotonic() + timeout
    value = fn()
    while value < at_least and time.monotonic() < deadline:
        time.sleep(0.25)
        value = fn()
    return value


class Setup:
    def __init__(self, ctx, c, db_name):
        self.ctx, self.c, self.db_name = ctx, c, db_name
        self.alice, self.bob = c.person("alice"), c.person("bob")
        self.conv = c.conversation(self.bob, self.alice)
        self.replica_used = None  # what replica-reads found
        for i in range(30):
            r = c.send(self.bob, self.conv, f"seed-{i}")
            if r.status != 201:
                raise RuntimeError(f"seeding: {r}")
        ctx.pg("wait-replay")

    def page(self, headers=None, token=None):
        return self.c.api.get(f"/v1/messages?conversation_id={self.conv}&limit=20", token or self.alice.token,
                              headers=headers)

    def reads_served(self, n):
        """n page reads; (answers not 200, replica scans, primary scans)."""
        r0, p0 = _scans(self.ctx, self.db_name), _primary_scans(self.ctx, self.db_name)
        bad = sum(1 for _ in range(n) if self.page().status != 200)
        r1 = _settled(lambda: _scans(self.ctx, self.db_name), r0 + n)
        p1 = _primary_scans(self.ctx, self.db_name)
        return bad, r1 - r0, p1 - p0


def reads_from_replica(s):
    bad, on_replica, on_primary = s.reads_served(READS)
    ok = bad == 0 and on_replica >= READS * 0.9
    s.replica_used = on_replica > 0
    return ok, f"{READS} page reads through the balancer: {bad} failed; scans of messages on the replica +{on_replica}, on the primary +{on_primary}"


def read_your_writes(s):
    """Each write's answer carries Confab-Read-After; a read through the
    other instance sending it back sees the write, even with the replica
    replaying 400 ms late (the server waits at most 100 ms for it, then
    reads the primary)."""
    ctx, c = s.ctx, s.c
    ctx.pg("replica-delay", "400")
    problems, lat, headers_seen = [], [], 0
    try:
        time.sleep(0.5)
        for i in range(20):
            text = f"ryw-{i}"
            w = c.send(s.bob, s.conv, text, pin="a")
            if w.status != 201:
                problems.append(f"send {i}: {w}")
                continue
            token = w.headers.get("confab-read-after")
            headers_seen += token is not None
            t0 = time.monotonic()
            r = c.api.get(f"/v1/messages?conversation_id={s.conv}&limit=5", s.bob.token, pin="b",
                          headers={"Confab-Read-After": token} if token else None)
            lat.append(time.monotonic() - t0)
            if r.status != 200 or text not in [m["message"] for m in r.json()["data"]]:
                problems.append(f"read {i} after the write: {r.status}, the write {'missing' if r.status == 200 else ''}")
    finally:
        ctx.pg("replica-delay", "0")
    ok = not problems and headers_seen == 20
    return ok, (f"20 writes through a, each read at once through b with the replica 400 ms behind: "
                f"{20 - len(problems)} saw their write, {headers_seen} answers carried Confab-Read-After, "
                f"read p99 {ms(percentile(lat, 99))}" + (f"; {problems[:3]}" if problems else ""))


def stopped_replica(s):
    """Readers through the balancer while the replica is stopped and
    started: no request fails, and reads go back to the replica."""
    ctx = s.ctx
    if not s.replica_used:
        return False, "the replica served no read in replica-reads: nothing to prove"
    bad, before, _ = s.reads_served(20)
    if bad or before < 18:
        return False, f"before the stop, of 20 reads {bad} failed and the replica served {before}: nothing to prove"
    stop = threading.Event()
    counts = {"ok": 0, "failed": 0}
    failures = []
    lock = threading.Lock()

    def reader():
        while not stop.is_set():
            r = s.page()
            with lock:
                if r.status == 200:
                    counts["ok"] += 1
                else:
                    counts["failed"] += 1
                    failures.append(repr(r))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        ctx.pg("replica-stop")
        time.sleep(2.0)
        ctx.pg("replica-start")
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(20)
    # Ten seconds for the instances to find the replica back, then reads.
    time.sleep(9.0)
    _, back, _ = s.reads_served(20)
    ok = counts["failed"] == 0 and back >= 18
    return ok, (f"{counts['ok'] + counts['failed']} reads while the replica stopped and started: {counts['failed']} failed"
                f"{' ' + str(failures[:2]) if failures else ''}; afterwards the replica served {back} of 20")


def lagging_replica(s):
    """A replica replaying further behind than CONFAB_REPLICA_MAX_LAG_MS is
    skipped: reads stay fresh and stop reaching it."""
    ctx, c = s.ctx, s.c
    if not s.replica_used:
        return False, "the replica served no read in replica-reads: nothing to prove"
    _, before, _ = s.reads_served(20)
    if before < 18:
        return False, f"the replica served {before} of 20 reads to begin with: nothing to prove"
    ctx.pg("replica-delay", str(MAX_LAG_MS * 3))
    stale, served, reads = 0, 0, 0
    try:
        # Writes keep coming, so the delay shows as lag.
        for i in range(25):
            text = f"lag-{i}"
            w = c.send(s.bob, s.conv, text)
            if w.status != 201:
                return False, f"send during the lag: {w}"
            time.sleep(0.1)
        time.sleep(MAX_LAG_MS / 1000 * 1.5)
        r0 = _scans(ctx, s.db_name)
        for i in range(20):
            text = f"lagread-{i}"
            c.send(s.bob, s.conv, text)
            r = s.page()  # no Confab-Read-After: a fresh read must still see it
            reads += 1
            if r.status != 200 or text not in [m["message"] for m in r.json()["data"]]:
                stale += 1
        time.sleep(STATS_SETTLE)
        served = _scans(ctx, s.db_name) - r0
        metric = _lag_metric(c)
    finally:
        ctx.pg("replica-delay", "0")
    # A few scans of the reads before may still be flushed into this window.
    ok = stale == 0 and served <= 4
    return ok, (f"replica {MAX_LAG_MS * 3} ms behind (bound {MAX_LAG_MS} ms): {reads} reads, {stale} missed the "
                f"latest write, the replica served {served}; lag metric: {metric or 'none'}")


def _lag_metric(c):
    text = c.by_name("a").metrics()
    return [line for line in text.splitlines()
            if not line.startswith("#") and "replica" in line.split(" ")[0] and "lag" in line.split(" ")[0]]


def lag_metric(s):
    """/metrics shows the replica's lag, and it grows when replay falls behind."""
    ctx, c = s.ctx, s.c
    idle = _lag_metric(c)
    ctx.pg("replica-delay", "2000")
    try:
        for i in range(10):
            c.send(s.bob, s.conv, f"metric-{i}")
            time.sleep(0.1)
        time.sleep(1.5)
        behind = _lag_metric(c)
    finally:
        ctx.pg("replica-delay", "0")

    def value(lines):
        try:
            return max(float(line.rsplit(" ", 1)[1]) for line in lines)
        except (ValueError, IndexError):
            return None

    v = value(behind)
    ok = bool(idle) and v is not None and v > 0
    return ok, f"idle: {idle or 'no metric naming the replica lag'}; replaying 2 s late: {behind or 'none'}"


def run(ctx):
    rep = ctx.report
    db_name = f"topology_replica_{ctx.run_id}"
    db = ctx.database(db_name)
    ctx.pg("wait-replay")
    c = ctx.cluster("replica", db, n=2,
                    CONFAB_REPLICA_DATABASE_URLS=f"{ctx.replica}/{db_name}",
                    CONFAB_REPLICA_MAX_LAG_MS=MAX_LAG_MS)
    rep.info("replica", f"2 instances behind HAProxy, CONFAB_REPLICA_DATABASE_URLS={ctx.replica}/{db_name}")
    try:
        s = Setup(ctx, c, db_name)
        rep.run("replica-reads", reads_from_replica, s)
        rep.run("replica-read-your-writes", read_your_writes, s)
        rep.run("replica-stopped", stopped_replica, s)
        rep.run("replica-lagging-skipped", lagging_replica, s)
        rep.run("replica-lag-metric", lag_metric, s)
    finally:
        c.stop()
