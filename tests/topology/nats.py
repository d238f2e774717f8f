"""NATS as the bus that wakes instances (CONFAB_EVENT_BUS=nats://...),
the event log staying in PostgreSQL: a private nats-server (Debian's) on
free ports, never the machine's shared one, with its monitoring port, whose
/connz and /varz show whether the instances use it."""

import http.client
import json
import os
import signal
import time

from harness import free_port, log_tail, ms, open_stream, percentile, psql, send_until_acked

POLL_BOUND = 1.0  # seconds: polling every 200 ms, plus a read, plus a busy machine


class Nats:
    def __init__(self, ctx):
        self.ctx = ctx
        self.port, self.monitor = free_port(), free_port()
        self.dir = os.path.join(ctx.work, f"nats-{self.port}")
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "nats.log")
        self.proc = None
        self.url = f"nats://127.0.0.1:{self.port}"

    def start(self):
        self.proc = self.ctx.procs.start(
            ["nats-server", "-a", "127.0.0.1", "-p", str(self.port), "-m", str(self.monitor)],
            self.log)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nats-server exited; its log:\n{log_tail(self.log)}")
            try:
                self.varz()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("nats-server did not answer on its monitoring port")

    def stop(self):
        self.ctx.procs.stop(self.proc, sig=signal.SIGKILL)

    def _get(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.monitor, timeout=3)
        conn.request("GET", path)
        body = conn.getresponse().read()
        conn.close()
        return json.loads(body)

    def varz(self):
        return self._get("/varz")

    def connections(self):
        return self._get("/connz").get("num_connections", 0)


def _listen_connections(ctx, db_name):
    return psql(ctx.primary, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'confab events' "
                             f"AND datname = '{db_name}'")


def run(ctx):
    rep = ctx.report
    db_name = f"topology_nats_{ctx.run_id}"
    db = ctx.database(db_name)
    nats = Nats(ctx).start()
    rep.info("nats", f"private nats-server on {nats.url} (monitoring on {nats.monitor}), 2 instances with CONFAB_EVENT_BUS={nats.url}")
    c = ctx.cluster("nats", db, n=2, CONFAB_EVENT_BUS=nats.url)
    alice, bob = c.person("alice"), c.person("bob")
    conv = c.conversation(bob, alice)
    state = {}

    def connected():
        deadline = time.monotonic() + 5
        n = 0
        while time.monotonic() < deadline:
            n = nats.connections()
            if n >= 2:
                break
            time.sleep(0.1)
        state["connected"] = n >= 2
        return n >= 2, (f"nats-server sees {n} client connection(s) from 2 instances; "
                        f"{_listen_connections(ctx, db_name)} LISTEN connections ('confab events') on PostgreSQL")

    rep.run("nats-instances-connect", connected)

    def burst(stream, prefix, count, rate=20.0):
        """Sends through B, paced; {text: start time} of the acknowledged."""
        started = {}
        for i in range(count):
            text = f"{prefix}-{i}"
            t0 = time.monotonic()
            r, _ = send_until_acked(c, bob, conv, text, pin="b")
            if r.status == 201:
                started[text] = t0
            left = 1.0 / rate - (time.monotonic() - t0)
            if left > 0:
                time.sleep(left)
        stream.wait_for(lambda fs: set(started) <= {f.data["payload"]["message"] for f in fs
                                                    if f.event == "message.created"}, 5.0)
        got = stream.messages()
        lost = [t for t in started if t not in got]
        twice = [t for t in started if len(got.get(t, [])) > 1]
        lat = [got[t][0].t - started[t] for t in started if t in got]
        return started, lost, twice, lat

    stream = open_stream(c.api, alice.token, pin="a", name="nats")
    try:
        def flows():
            before = nats.varz().get("in_msgs", 0)
            started, lost, twice, lat = burst(stream, "nats-on", 40)
            carried = nats.varz().get("in_msgs", 0) - before
            state["carried"] = carried
            rep.figure("nats-delivery", f"p99 {ms(percentile(lat, 99))} over {len(lat)} events through B to A's stream "
                                        f"({carried} NATS messages published meanwhile)")
            ok = not lost and not twice and carried > 0
            return ok, (f"{len(started)} sends through b reached a's stream ({len(lost)} lost, {len(twice)} repeated); "
                        f"{carried} messages went through NATS"
                        + ("" if carried else ": the wake-ups did not go through NATS (NOTIFY carried them)"))

        rep.run("nats-events-flow", flows)

        def down():
            carried_before = state.get("carried", 0)
            nats.stop()
            time.sleep(0.3)
            started, lost, twice, lat = burst(stream, "nats-off", 30)
            p99 = percentile(lat, 99)
            rep.figure("nats-down-delivery", f"p99 {ms(p99)} over {len(lat)} events with nats-server stopped")
            ready = c.by_name("a").api.get("/readyz")
            detail_says = "nats" in ready.text().lower() or "bus" in ready.text().lower()
            metric = [line for line in c.by_name("a").metrics().splitlines()
                      if not line.startswith("#") and ("nats" in line.lower() or "event_bus" in line.lower())]
            state["readyz"] = (ready.status, ready.text()[:200], detail_says, metric[:3])
            ok = (carried_before > 0 and not lost and not twice and p99 is not None and p99 <= POLL_BOUND)
            return ok, (f"nats-server killed: {len(started)} sends, {len(lost)} lost, {len(twice)} repeated, "
                        f"p99 {ms(p99)} (bound {ms(POLL_BOUND)})"
                        + ("" if carried_before > 0 else "; NATS carried nothing before it stopped, so this proves nothing about falling back"))

        rep.run("nats-down-no-loss", down)

        def readyz():
            status, body, says, metric = state.get("readyz", (None, "", False, []))
            ok = status == 200 and says and bool(metric)
            return ok, (f"/readyz with NATS down: {status} {body!r}; metric lines naming the bus: {metric or 'none'}")

        rep.run("nats-down-readyz", readyz)

        def recovers():
            nats.start()  # the same ports
            deadline = time.monotonic() + 10
            n = 0
            while time.monotonic() < deadline:
                n = nats.connections()
                if n >= 2:
                    break
                time.sleep(0.2)
            before = nats.varz().get("in_msgs", 0)
            _, lost, twice, _ = burst(stream, "nats-back", 20)
            carried = nats.varz().get("in_msgs", 0) - before
            ok = n >= 2 and carried > 0 and not lost and not twice
            return ok, (f"nats-server started again: {n} instance connection(s) within 10 s, {carried} messages through it, "
                        f"{len(lost)} lost, {len(twice)} repeated")

        rep.run("nats-recovers", recovers)
    finally:
        stream.stop()
        c.stop()
        nats.stop()
