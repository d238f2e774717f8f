"""Three instances on one PostgreSQL behind HAProxy, files on S3: what a
client does through the balancer behaves as on one instance."""

import hashlib
import os
import threading
import time
import uuid

from harness import Stream, ms, multipart, open_stream, percentile, send_until_acked

DELIVERY_MESSAGES = 150
DELIVERY_RATE = 30.0  # sends per second, alternating between B and C
DELIVERY_P99_BOUND = 0.100  # seconds
THROUGHPUT_SENDERS = 8
THROUGHPUT_SECS = 5.0


def sends_and_reads(c):
    """Sends through the balancer land on every instance, and each is read
    at once through the next one (same PostgreSQL: no stale read)."""
    alice, bob = c.person("alice"), c.person("bob")
    conv = c.conversation(bob, alice)
    sent_on, read_on, problems, ids = {}, {}, [], []
    for i in range(30):
        text = f"sr-{i}"
        r = c.send(bob, conv, text)
        if r.status != 201:
            problems.append(f"send {i}: {r}")
            continue
        sent_on[r.instance] = sent_on.get(r.instance, 0) + 1
        msg = r.json()["id"]
        ids.append(msg)
        g = c.api.get(f"/v1/messages/{msg}", alice.token)
        read_on[g.instance] = read_on.get(g.instance, 0) + 1
        if g.status != 200 or g.json().get("message") != text:
            problems.append(f"read {i} via {g.instance}: {g}")
    listed = []
    after = None
    while True:
        q = f"/v1/messages?conversation_id={conv}&limit=100" + (f"&starting_after={after}" if after else "")
        page = c.api.get(q, alice.token)
        if page.status != 200:
            problems.append(f"list: {page}")
            break
        data = page.json()
        listed += [m["id"] for m in data["data"]]
        if not data["has_more"]:
            break
        after = listed[-1]
    if sorted(listed) != sorted(ids):
        problems.append(f"the list holds {len(listed)} messages, {len(ids)} were sent")
    names = {i.name for i in c.instances}
    if set(sent_on) != names or set(read_on) != names:
        problems.append(f"not every instance took part: sends {sent_on}, reads {read_on}")
    ok = not problems
    detail = f"30 sends (by instance {dict(sorted(sent_on.items()))}), each read at once through another ({dict(sorted(read_on.items()))}), listed whole"
    return ok, detail if ok else "; ".join(problems[:5])


def idempotency_across_instances(c):
    """A retry with the same Idempotency-Key answered by another instance is
    the first answer, replayed."""
    alice, bob = c.person("alice"), c.person("bob")
    conv = c.conversation(bob, alice)
    key = str(uuid.uuid4())
    first = c.send(bob, conv, "once", pin="a", key=key)
    again = c.send(bob, conv, "once", pin="b", key=key)
    third = c.send(bob, conv, "once", pin="c", key=key)
    ok = (first.status == 201 and again.status == 201 and third.status == 201
          and again.headers.get("idempotent-replayed") == "true"
          and third.headers.get("idempotent-replayed") == "true"
          and first.json()["id"] == again.json()["id"] == third.json()["id"]
          and (first.instance, again.instance, third.instance) == ("a", "b", "c"))
    return ok, (f"sent through a, retried through b and c: one message, replayed "
                f"({first.status}/{again.status}/{third.status}, "
                f"Idempotent-Replayed {again.headers.get('idempotent-replayed')}/{third.headers.get('idempotent-replayed')})")


def delivery(c, report):
    """Events from any instance reach streams on every other: the receiver
    has a stream on each of A, B and C, and the senders write through A, B
    and C in turn. Every stream gets every event once; between instances
    the 99th percentile is within DELIVERY_P99_BOUND, from the write's
    acknowledgement to the frame (what the way between instances adds; a
    frame read before the acknowledgement counts 0). The time from the
    start of the POST is printed too: it adds the send's own time."""
    alice, bob, carol = c.person("alice"), c.person("bob"), c.person("carol")
    conv_b, conv_c = c.conversation(bob, alice), c.conversation(carol, alice)
    names = [i.name for i in c.instances]
    streams = {}
    try:
        for name in names:
            streams[name] = open_stream(c.api, alice.token, pin=name, name=f"delivery-{name}")
            if streams[name].connections[-1]["instance"] != name:
                return False, f"the stream pinned to {name} opened on {streams[name].connections[-1]['instance']}"
        started, acked, through, problems = {}, {}, {}, []
        interval = 1.0 / DELIVERY_RATE
        for i in range(DELIVERY_MESSAGES):
            who, conv = (bob, conv_b) if i % 2 == 0 else (carol, conv_c)
            pin = names[i % len(names)]
            text = f"dlv-{i}"
            t0 = time.monotonic()
            started[text] = t0
            through[text] = pin
            r = c.send(who, conv, text, pin=pin)
            acked[text] = time.monotonic()
            if r.status != 201 or r.instance != pin:
                problems.append(f"send {i} through {pin}: {r}")
            left = interval - (time.monotonic() - t0)
            if left > 0:
                time.sleep(left)
        for s in streams.values():
            s.wait_for(lambda fs: len({f.data["payload"]["message"] for f in fs
                                       if f.event == "message.created"}) >= len(started), 5.0)
        got = {name: s.messages() for name, s in streams.items()}
    finally:
        for s in streams.values():
            s.stop()
    missing = [(t, name) for name in names for t in started if t not in got[name]]
    repeated = [(t, name) for name in names for t, fs in got[name].items() if len(fs) > 1]
    cross = [max(0.0, got[n][t][0].t - acked[t]) for n in names for t in started if t in got[n] and through[t] != n]
    same = [max(0.0, got[n][t][0].t - acked[t]) for n in names for t in started if t in got[n] and through[t] == n]
    whole = [got[n][t][0].t - started[t] for n in names for t in started if t in got[n] and through[t] != n]
    p50, p99, worst = percentile(cross, 50), percentile(cross, 99), max(cross, default=None)
    report.figure("delivery-across-instances",
                  f"p50 {ms(p50)}, p99 {ms(p99)}, max {ms(worst)} over {len(cross)} deliveries to a stream on "
                  f"another instance than the send's ({DELIVERY_RATE:.0f} sends/s, from the send's acknowledgement); "
                  f"same instance p99 {ms(percentile(same, 99))}; from the start of the POST p99 {ms(percentile(whole, 99))}; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    ok = not problems and not missing and not repeated and p99 is not None and p99 <= DELIVERY_P99_BOUND
    detail = (f"{len(started)} sends through a, b and c in turn, each delivered once to the streams on a, b and c; "
              f"across instances p99 {ms(p99)} (bound {ms(DELIVERY_P99_BOUND)})"
              + (f"; missing {missing[:5]}" if missing else "")
              + (f"; repeated {repeated[:5]}" if repeated else "")
              + (f"; {problems[:3]}" if problems else ""))
    return ok, detail


def typing(c, report):
    """A start posted through B reaches a stream on A; a second start
    through C within 2 s is dropped (one board across instances); a send
    through C ends the start taken by B."""
    alice, bob = c.person("alice"), c.person("dora")
    conv = c.conversation(bob, alice)
    stream = open_stream(c.api, alice.token, pin="a", name="typing")

    def typing_frames(state):
        return lambda fs: [f for f in fs if f.event == "typing" and f.data.get("contact_id") == bob.id
                           and f.data.get("conversation_id") == conv and f.data.get("state") == state]

    try:
        t0 = time.monotonic()
        r = c.api.post(f"/v1/conversations/{conv}/typing", bob.token, form={"state": "start"}, pin="b")
        if r.status != 204:
            return False, f"typing start through b: {r}"
        first = stream.wait_for(typing_frames("start"), 3.0)
        if not first:
            return False, "a typing start posted through b never reached the stream on a"
        delay = first[0].t - t0
        time.sleep(0.3)  # the news reaches every board, not only A's
        r = c.api.post(f"/v1/conversations/{conv}/typing", bob.token, form={"state": "start"}, pin="c")
        if r.status != 204:
            return False, f"typing start through c: {r}"
        time.sleep(1.0)
        starts = typing_frames("start")(stream.snapshot())
        r = c.send(bob, conv, "done typing", pin="c")
        if r.status != 201:
            return False, f"send through c: {r}"
        stop = stream.wait_for(typing_frames("stop"), 3.0)
        created = stream.wait_for(lambda fs: [f for f in fs if f.event == "message.created"
                                              and f.data["payload"]["message"] == "done typing"], 3.0)
    finally:
        stream.stop()
    report.figure("typing-across-instances", f"{ms(delay)} from the POST through B to the frame on A")
    problems = []
    if len(starts) != 1:
        problems.append(f"{len(starts)} starts reached A for two posts 0.3 s apart through b and c (the 2 s rule holds for one)")
    if not stop:
        problems.append("the send through c did not end the start taken through b")
    if not created:
        problems.append("the message sent through c did not reach A")
    ok = not problems
    return ok, ("start through b reached A in " + ms(delay) + "; the repeat through c was dropped; "
                "a send through c stopped it") if ok else "; ".join(problems)


def presence(c):
    """A contact with a stream open on A is online to a peer asking B; one
    who never connected is not."""
    alice, bob, zed = c.person("alice"), c.person("bob"), c.person("zed")
    c.conversation(bob, alice)
    c.conversation(bob, zed)
    stream = open_stream(c.api, alice.token, pin="a", name="presence")
    try:
        time.sleep(0.5)
        r = c.api.get(f"/v1/contacts/{alice.id}", bob.token, pin="b")
        never = c.api.get(f"/v1/contacts/{zed.id}", bob.token, pin="c")
    finally:
        stream.stop()
    if r.status != 200 or never.status != 200:
        return False, f"GET /v1/contacts/{{id}} through b and c: {r}, {never}"
    p, q = r.json().get("presence"), never.json().get("presence")
    ok = (isinstance(p, dict) and p.get("online") is True
          and isinstance(q, dict) and q.get("online") is False)
    return ok, (f"alice streams on a, bob asks b: presence {p!r}; zed never connected, bob asks c: {q!r}"
                + ("" if p is not None else " (the contact object has no presence)"))


def uploads(c):
    """A file uploaded through A is read through B and C: by id, its
    content with a token, its signed link without one, and by the other
    member once attached (the bytes live in S3, not on an instance)."""
    alice, bob = c.person("alice"), c.person("bob")
    conv = c.conversation(alice, bob)
    data = os.urandom(300_000)
    digest = hashlib.sha256(data).hexdigest()
    body, ctype = multipart("topology.bin", data)
    r = c.api.post("/v1/attachments", alice.token, body=body, content_type=ctype, pin="a")
    if r.status != 201 or r.instance != "a":
        return False, f"upload through a: {r}"
    att = r.json()
    problems = []
    meta = c.api.get(f"/v1/attachments/{att['id']}", alice.token, pin="b")
    if meta.status != 200:
        problems.append(f"GET by id through b: {meta}")
    content = c.api.get(f"/v1/attachments/{att['id']}/content", alice.token, pin="c")
    if content.status != 200 or hashlib.sha256(content.body).hexdigest() != digest:
        problems.append(f"content through c: {content.status}, {len(content.body)} bytes")
    link = meta.json()["file_url"] if meta.status == 200 else att["file_url"]
    path = link[link.index("/v1/"):]
    signed = c.api.get(path, pin="b")
    if signed.status != 200 or hashlib.sha256(signed.body).hexdigest() != digest:
        problems.append(f"signed link through b: {signed.status}, {len(signed.body)} bytes")
    sent = c.api.post("/v1/messages", alice.token, pin="b", key=str(uuid.uuid4()),
                      form={"conversation_id": conv, "attachments[0][id]": att["id"]})
    if sent.status != 201:
        problems.append(f"attach through b: {sent}")
    peer = c.api.get(f"/v1/attachments/{att['id']}/content", bob.token, pin="c")
    if peer.status != 200 or hashlib.sha256(peer.body).hexdigest() != digest:
        problems.append(f"bob's read through c: {peer.status}")
    ok = not problems
    return ok, ("300 KB uploaded through a: read through b and c by id, content, signed link, "
                "and by the other member once attached") if ok else "; ".join(problems)


def throughput(c, report):
    """Sends per second through the balancer: THROUGHPUT_SENDERS contacts,
    each sending in its own conversation as fast as it is answered."""
    people = [c.person(f"load{i}") for i in range(THROUGHPUT_SENDERS)]
    peer = c.person("loadpeer")
    convs = [c.conversation(p, peer) for p in people]
    counts = [0] * len(people)
    failures = [0] * len(people)
    lat = [[] for _ in people]
    stop = time.monotonic() + THROUGHPUT_SECS

    def run(i):
        n = 0
        while time.monotonic() < stop:
            t0 = time.monotonic()
            r = c.send(people[i], convs[i], f"load-{i}-{n}")
            n += 1
            if r.status == 201:
                counts[i] += 1
                lat[i].append(time.monotonic() - t0)
            else:
                failures[i] += 1

    t0 = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(people))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    total = sum(counts)
    all_lat = [x for xs in lat for x in xs]
    rate = total / elapsed
    report.figure("sends-through-balancer",
                  f"{rate:.0f} sends/s ({total} in {elapsed:.1f} s, {THROUGHPUT_SENDERS} senders, "
                  f"{len(c.instances)} instances), p99 {ms(percentile(all_lat, 99))}, {sum(failures)} failed; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return sum(failures) == 0 and total > 0, f"{total} sends in {elapsed:.1f} s, {sum(failures)} failed"


def kill_mid_stream(c, report):
    """A stream on A; four senders write to its owner through the balancer
    with Idempotency-Keys, retrying any failure. A is killed (SIGKILL): the
    stream reconnects through the balancer with Last-Event-ID, lands on
    another instance, and every acknowledged message reaches it exactly
    once; the database holds each exactly once."""
    alice = c.person("erin")
    senders_ = [c.person(n) for n in ("bob", "carol", "frank", "gina")]
    convs = {p.name: c.conversation(p, alice) for p in senders_}
    stream = Stream(c.api, alice.token, pin="a", reconnect=True, name="kill")
    stream.start()
    if stream.wait_connected(10) is None or stream.connections[0]["instance"] != "a":
        stream.stop()
        return False, f"the stream did not open on a: {stream.connections}"
    acked, unacked, stop = {}, [], threading.Event()
    attempts = {"total": 0, "retried": 0, "slowest": 0.0}
    answers = {}
    lock = threading.Lock()

    def sender(person):
        n = 0
        while not stop.is_set():
            text = f"kill-{person.name}-{n}"
            n += 1
            mine = {}
            t0 = time.monotonic()
            r, tries = send_until_acked(c, person, convs[person.name], text, answers=mine)
            took = time.monotonic() - t0
            with lock:
                attempts["slowest"] = max(attempts["slowest"], took)
                for status, count in mine.items():
                    answers[status] = answers.get(status, 0) + count
                attempts["total"] += tries
                attempts["retried"] += tries - 1
                if r.status == 201:
                    acked[text] = r.json()["id"]
                else:
                    unacked.append((text, repr(r)))

    senders = [threading.Thread(target=sender, args=(p,)) for p in senders_]
    for t in senders:
        t.start()
    time.sleep(1.5)
    killed_at = time.monotonic()
    c.by_name("a").kill9()
    back = None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        conns = stream.connections
        if len(conns) > 1 and conns[-1]["connected_at"] is not None:
            back = conns[-1]
            break
        time.sleep(0.05)
    time.sleep(1.5)
    stop.set()
    for t in senders:
        t.join(30)
    stream.wait_for(lambda fs: set(acked) <= {f.data["payload"]["message"] for f in fs
                                              if f.event == "message.created"}, 10.0)
    stream.stop()

    frames = stream.snapshot()
    got = stream.messages()
    ids = [f.id for f in frames if f.id]
    repeated_ids = len(ids) - len(set(ids))
    lost = sorted(t for t in acked if t not in got)
    twice = sorted(t for t, fs in got.items() if t in acked and len(fs) > 1)
    # The database: every acknowledged text exactly once.
    in_db = {}
    for conv in convs.values():
        after = None
        while True:
            q = f"/v1/messages?conversation_id={conv}&limit=100" + (f"&starting_after={after}" if after else "")
            page = c.api.get(q, alice.token)
            if page.status != 200:
                return False, f"listing after the kill: {page}"
            data = page.json()
            for m in data["data"]:
                in_db[m["message"]] = in_db.get(m["message"], 0) + 1
            if not data["has_more"]:
                break
            after = data["data"][-1]["id"]
    not_stored = sorted(t for t in acked if in_db.get(t, 0) == 0)
    stored_twice = sorted(t for t, n in in_db.items() if n > 1)
    gap = (back["connected_at"] - killed_at) if back else None
    report.figure("kill-resume",
                  f"stream back on {back['instance'] if back else 'nothing'} {ms(gap)} after the kill; "
                  f"{len(acked)} messages acknowledged, {attempts['retried']} retries of {attempts['total']} attempts "
                  f"(answers {dict(sorted(answers.items(), key=str))}; a key held by the killed instance answers 409 "
                  f"until its lease ends), slowest acknowledgement {attempts['slowest']:.1f} s")
    problems = []
    if back is None:
        problems.append(f"the stream never reconnected: {stream.connections[1:]}")
    elif back["instance"] == "a":
        problems.append("the stream reconnected to the killed instance")
    if unacked:
        problems.append(f"{len(unacked)} sends never acknowledged: {unacked[:2]}")
    if lost:
        problems.append(f"{len(lost)} acknowledged messages never reached the stream: {lost[:5]}")
    if twice or repeated_ids:
        problems.append(f"repeated on the stream: {twice[:5]} ({repeated_ids} repeated event ids)")
    if not_stored or stored_twice:
        problems.append(f"database: missing {not_stored[:5]}, twice {stored_twice[:5]}")
    ok = not problems
    return ok, (f"{len(acked)} acknowledged, all on the stream once (resumed on {back['instance']} "
                f"with Last-Event-ID) and stored once") if ok else "; ".join(problems)


def run(ctx):
    rep = ctx.report
    db = ctx.database(f"topology_cluster_{ctx.run_id}")
    c = ctx.cluster("cluster", db, n=3, CONFAB_STORAGE_URL=f"{ctx.s3_url}/cluster")
    rep.info("cluster", f"3 instances behind HAProxy 2.6 on {c.lb.base}, files in {ctx.s3_url}/cluster")
    rep.run("cluster-sends-reads", sends_and_reads, c)
    rep.run("cluster-idempotency", idempotency_across_instances, c)
    rep.run("cluster-delivery-p99", delivery, c, rep)
    rep.run("cluster-typing", typing, c, rep)
    rep.run("cluster-presence", presence, c)
    rep.run("cluster-uploads-s3", uploads, c)
    rep.run("cluster-throughput", throughput, c, rep)
    rep.run("cluster-kill-resume", kill_mid_stream, c, rep)
    c.stop()
