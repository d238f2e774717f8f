"""The topology measurements (tests/topology/measure.sh): a small table of

- sends per second through HAProxy with 1 and with 3 instances, and the
  delivery p99 meanwhile (every message goes to one watcher whose stream is
  on instance A; with 3 instances two sends in three are answered by
  another instance), with NOTIFY, then with NATS as the bus when the server
  has it;
- pages of messages read per second, without and with a read replica (and
  how many of those reads the replica served, by its statistics).

Each measurement runs TOPO_MEASURE_SECS (default 10) seconds with
TOPO_MEASURE_CLIENTS (default 8) clients. Run it on a quiet machine.
"""

import os
import threading
import time

from harness import ms, open_stream, percentile
from nats import Nats
from replica import STATS_SETTLE, _scans

SECS = float(os.environ.get("TOPO_MEASURE_SECS", "10"))
CLIENTS = int(os.environ.get("TOPO_MEASURE_CLIENTS", "8"))
# The clients are few and fast: the per-contact budget would measure itself.
UNLIMITED = {"CONFAB_RATE_LIMIT_PER_SECOND": 0}


def sends(c):
    """(sends/s, p99 delivery to A for sends answered elsewhere, the same for
    sends answered by A, failures)."""
    watcher = c.person("watcher")
    people = [c.person(f"sender{i}") for i in range(CLIENTS)]
    convs = [c.conversation(p, watcher) for p in people]
    stream = open_stream(c.api, watcher.token, pin="a", name="watch")
    acked, lock = {}, threading.Lock()
    failures = [0]
    stop_at = time.monotonic() + SECS

    def run(i):
        n = 0
        while time.monotonic() < stop_at:
            text = f"m-{i}-{n}"
            n += 1
            r = c.send(people[i], convs[i], text)
            with lock:
                if r.status == 201:
                    acked[text] = (time.monotonic(), r.instance)
                else:
                    failures[0] += 1

    t0 = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    stream.wait_for(lambda fs: sum(1 for f in fs if f.event == "message.created") >= len(acked), 10)
    got = stream.messages()
    stream.stop()
    cross = [max(0.0, got[t][0].t - at) for t, (at, inst) in acked.items() if t in got and inst != "a"]
    same = [max(0.0, got[t][0].t - at) for t, (at, inst) in acked.items() if t in got and inst == "a"]
    missing = sum(1 for t in acked if t not in got)
    return len(acked) / elapsed, percentile(cross, 99), percentile(same, 99), failures[0] + missing


def reads(ctx, c, db_name, conv, reader):
    """(pages/s, share of them the replica served)."""
    before = _scans(ctx, db_name) if ctx.replica else 0
    count, failures, lock = [0], [0], threading.Lock()
    stop_at = time.monotonic() + SECS

    def run():
        while time.monotonic() < stop_at:
            r = c.api.get(f"/v1/messages?conversation_id={conv}&limit=20", reader.token)
            with lock:
                if r.status == 200:
                    count[0] += 1
                else:
                    failures[0] += 1

    t0 = time.monotonic()
    threads = [threading.Thread(target=run) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    time.sleep(STATS_SETTLE)
    served = _scans(ctx, db_name) - before
    return count[0] / elapsed, served / max(1, count[0]), failures[0]


def run(ctx):
    rows = []

    def row(what, value, note=""):
        rows.append((what, value, note))
        print(f"  {what:<52} {value:>14}  {note}", flush=True)

    def load():
        return " ".join(f"{x:.1f}" for x in os.getloadavg())

    print(f"measuring {ctx.bin}: {SECS:.0f} s each, {CLIENTS} clients; load average {load()} "
          f"on {os.cpu_count()} CPUs (figures from a busy machine mean little)", flush=True)
    for n in (1, 3):
        db = ctx.database(f"topology_measure_{n}_{ctx.run_id}")
        c = ctx.cluster(f"measure{n}", db, n=n, **UNLIMITED)
        rate, cross, same, bad = sends(c)
        c.stop()
        row(f"sends/s, {n} instance{'s' if n > 1 else ''}, NOTIFY", f"{rate:.0f}", f"{bad} failed or undelivered")
        row(f"  delivery p99 to A, sent through A ({n})", ms(same))
        if n > 1:
            row(f"  delivery p99 to A, sent through B or C ({n})", ms(cross))

    nats = Nats(ctx).start()
    db = ctx.database(f"topology_measure_nats_{ctx.run_id}")
    c = ctx.cluster("measurenats", db, n=3, CONFAB_EVENT_BUS=nats.url, **UNLIMITED)
    time.sleep(1)
    if nats.connections() < 3:
        row("sends/s, 3 instances, NATS", "n/a", "the server did not connect to NATS (CONFAB_EVENT_BUS ignored)")
    else:
        rate, cross, same, bad = sends(c)
        row("sends/s, 3 instances, NATS", f"{rate:.0f}", f"{bad} failed or undelivered")
        row("  delivery p99 to A, sent through B or C (3, NATS)", ms(cross))
    c.stop()
    nats.stop()

    db_name = f"topology_measure_reads_{ctx.run_id}"
    db = ctx.database(db_name)
    for replica in (False, True):
        extra = {"CONFAB_REPLICA_DATABASE_URLS": f"{ctx.replica}/{db_name}"} if replica else {}
        c = ctx.cluster("measurereads", db, n=1, **extra, **UNLIMITED)
        alice, bob = c.person(f"alice{int(replica)}"), c.person(f"bob{int(replica)}")
        conv = c.conversation(bob, alice)
        for i in range(200):
            c.send(bob, conv, f"page-{i}")
        ctx.pg("wait-replay")
        rate, share, bad = reads(ctx, c, db_name, conv, alice)
        c.stop()
        row(f"pages/s, 1 instance, {'with' if replica else 'without'} a replica", f"{rate:.0f}",
            f"replica served {share:.0%}; {bad} failed")
    print(f"load average at the end: {load()}", flush=True)
    return rows
