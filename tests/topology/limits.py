"""Per-contact limits with three instances: a contact gets what it would
get from one instance, whichever instances the balancer picks.

Three instances with a small budget (RATE per second, burst BURST, at most
STREAMS open streams per contact) behind their own HAProxy. Each check
first shows the limit holding on one instance (pinned), so that the check
across instances can tell a shared limit from none."""

import math
import threading
import time

RATE, BURST, STREAMS = 1, 5, 2
REQUESTS = 30


def _burst(c, person, pin):
    """REQUESTS authenticated reads fired at once (6 threads): (allowed,
    refused, other, elapsed, instances that allowed)."""
    results = []
    lock = threading.Lock()
    per_thread = REQUESTS // 6

    def go():
        for _ in range(per_thread):
            r = c.api.get("/v1/contacts/me", person.token, pin=pin)
            with lock:
                results.append(r)

    t0 = time.monotonic()
    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    allowed = [r for r in results if r.status == 200]
    refused = [r for r in results if r.status == 429]
    by = {}
    for r in allowed:
        by[r.instance] = by.get(r.instance, 0) + 1
    return len(allowed), len(refused), len(results) - len(allowed) - len(refused), elapsed, by


def _bound(elapsed):
    # What one bucket lets through in that time, plus one for a refill
    # landing between the clocks.
    return BURST + math.ceil(elapsed * RATE) + 1


def rate_one_instance(c):
    p = c.person("ratepinned")
    allowed, refused, other, elapsed, _ = _burst(c, p, pin="a")
    ok = allowed <= _bound(elapsed) and refused > 0 and other == 0
    return ok, f"{REQUESTS} requests pinned to a in {elapsed:.1f} s: {allowed} allowed (bound {_bound(elapsed)}), {refused} refused with 429"


def rate_across_instances(c):
    p = c.person("ratespread")
    allowed, _, other, elapsed, by = _burst(c, p, pin=None)
    ok = allowed <= _bound(elapsed) and other == 0
    return ok, (f"{REQUESTS} requests through the balancer in {elapsed:.1f} s: {allowed} allowed "
                f"(one instance allows at most {_bound(elapsed)}), by instance {dict(sorted(by.items()))}"
                + ("" if ok else ": each instance keeps its own budget"))


def _streams(c, person, pins):
    from harness import Stream
    streams, statuses = [], []
    for pin in pins:
        s = Stream(c.api, person.token, pin=pin, name=f"limit-{pin}")
        s.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            conns = s.connections
            if conns and (conns[0]["connected_at"] is not None or conns[0]["ended_at"] is not None):
                break
            time.sleep(0.02)
        conn = s.connections[0] if s.connections else {}
        statuses.append((pin, conn.get("status"), conn.get("instance")))
        streams.append(s)
    for s in streams:
        s.stop()
    return statuses


def streams_one_instance(c):
    p = c.person("streamspinned")
    st = _streams(c, p, ["a"] * (STREAMS + 1))
    codes = [s[1] for s in st]
    ok = codes == [200] * STREAMS + [429]
    return ok, f"{STREAMS + 1} streams pinned to a: {codes} (limit {STREAMS} per contact)"


def streams_across_instances(c):
    p = c.person("streamsspread")
    pins = [i.name for i in c.instances][: STREAMS + 1]
    st = _streams(c, p, pins)
    codes = [s[1] for s in st]
    ok = codes[:STREAMS] == [200] * STREAMS and codes[STREAMS] == 429
    return ok, (f"{STREAMS + 1} streams, one per instance {pins}: {codes} (limit {STREAMS} per contact)"
                + ("" if ok else ": each instance counts its own streams"))


def run(ctx):
    rep = ctx.report
    db = ctx.database(f"topology_limits_{ctx.run_id}")
    c = ctx.cluster("limits", db, n=3,
                    CONFAB_RATE_LIMIT_PER_SECOND=RATE, CONFAB_RATE_LIMIT_BURST=BURST,
                    CONFAB_MAX_STREAMS_PER_CONTACT=STREAMS)
    rep.info("limits", f"3 instances, {RATE}/s per contact, burst {BURST}, {STREAMS} streams per contact")
    for name in ("ratepinned", "ratespread", "streamspinned", "streamsspread"):
        c.person(name)  # made with the server key, whose budget is apart
    rep.run("limits-rate-one-instance", rate_one_instance, c)
    rep.run("limits-rate-across-instances", rate_across_instances, c)
    rep.run("limits-streams-one-instance", streams_one_instance, c)
    rep.run("limits-streams-across-instances", streams_across_instances, c)
    c.stop()
