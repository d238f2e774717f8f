"""The load cases of the hostile run (see run.sh): clients that try to take
the connections or the disk from others, while a victim keeps working.

- heads: one address holds up to 800 request heads that never end,
  sending a byte of each every 3 s and reopening each as the server closes
  it;
- trickle: another contact keeps up to 784 uploads open, a byte of each
  every 3 s, reopening each as the server answers it;
- victim: a third contact, on new connections from its own address,
  asks every 0.2 s and uploads a small file every 5 s: every request must
  be served, and fast;
- quota: one contact uploads 20 files of 5 MiB as fast as its share of
  uploads under way allows: its quota (30 MiB, set by run.sh) keeps 6.

Scaled to stay bounded (about 30 s of the run): the finding's pace is kept
(a byte every 3 s on 800 heads and 784 uploads), but the attack lasts 25 s
instead of the finding's 40 s; within it the server's own clocks cycle
several times over (a first head has 5 s, a next head 10 s, an upload body
must bring 8 KiB in each 10 s), so every trickle the server let in is cut
at least twice, and ~120 victim requests show that none is refused.
"""

import json
import select
import selectors
import socket
import threading
import time

from hostile import check, connect, error_code, read_head, request

ATTACK_SECONDS = 25
WARM_UP_SECONDS = 3
REOPEN_PER_SECOND = 200
BOUNDARY = "hostileboundary"


class Attacker:
    """Keeps up to `count` sockets open from `source`, each started with
    `opening` and then sent `drip` every `every` s; a socket the server
    answers (or closes) is counted by its answer and reopened, at most
    REOPEN_PER_SECOND a second."""

    def __init__(self, name, port, source, count, opening, drip, every):
        self.name, self.port, self.source = name, port, source
        self.count, self.opening, self.drip, self.every = count, opening, drip, every
        self.answers = {}
        self.opened = 0
        self.most_open = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open_one(self, sel):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((self.source, 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return False
        sel.register(s, selectors.EVENT_WRITE, {"state": "connecting", "buf": b"", "next": 0.0})
        self.opened += 1
        return True

    def count_answer(self, buf):
        if not buf:
            key = "closed without an answer"
        else:
            line = buf.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split()
            status = parts[1] if len(parts) > 1 else "?"
            body = buf.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in buf else b""
            key = f"{status} {error_code(body) or ''}".strip()
        self.answers[key] = self.answers.get(key, 0) + 1

    def run(self):
        sel = selectors.DefaultSelector()
        budget = 0.0
        last = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            budget = min(REOPEN_PER_SECOND, budget + (now - last) * REOPEN_PER_SECOND)
            last = now
            while len(sel.get_map()) < self.count and budget >= 1:
                if not self.open_one(sel):
                    break
                budget -= 1
            self.most_open = max(self.most_open, len(sel.get_map()))
            for key, events in sel.select(timeout=0.05):
                s, data = key.fileobj, key.data
                if data["state"] == "connecting" and events & selectors.EVENT_WRITE:
                    try:
                        s.send(self.opening)
                        data["state"] = "dripping"
                        data["next"] = time.monotonic() + self.every
                        sel.modify(s, selectors.EVENT_READ, data)
                    except OSError:
                        self.count_answer(b"")
                        sel.unregister(s)
                        s.close()
                    continue
                if events & selectors.EVENT_READ:
                    try:
                        chunk = s.recv(65536)
                    except OSError:
                        chunk = b""
                    if chunk:
                        data["buf"] += chunk
                        if b"\r\n\r\n" not in data["buf"]:
                            continue
                    self.count_answer(data["buf"])
                    sel.unregister(s)
                    s.close()
            now = time.monotonic()
            for key in list(sel.get_map().values()):
                data = key.data
                if data["state"] == "dripping" and now >= data["next"]:
                    data["next"] = now + self.every
                    try:
                        key.fileobj.send(self.drip)
                    except OSError:
                        pass
        for key in list(sel.get_map().values()):
            key.fileobj.close()


def head_opening():
    return b"GET /v1/contacts/me HTTP/1.1\r\nHost: confab\r\nX-Slow: "


def upload_opening(token, size):
    preamble = (
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
        f"filename=\"slow.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    ).encode()
    closing = f"\r\n--{BOUNDARY}--\r\n".encode()
    length = len(preamble) + size + len(closing)
    head = (
        f"POST /v1/attachments HTTP/1.1\r\nHost: confab\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()
    return head + preamble


def multipart_file(name, data):
    body = (
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
        f"Content-Type: application/octet-stream\r\n\r\n"
    ).encode() + data + f"\r\n--{BOUNDARY}--\r\n".encode()
    return body


def upload(port, token, name, data, timeout=30):
    """One upload on a new connection; (status, body, seconds). The body
    goes in pieces, and an answer that comes before it is all sent (a
    refusal, after which the server reads no more) is read at once."""
    body = multipart_file(name, data)
    started = time.monotonic()
    try:
        s = connect(port, timeout=timeout)
    except OSError:
        return None, b"", time.monotonic() - started
    r = None
    # poll, not select: this process holds more than 1,024 sockets.
    answered = select.poll()
    answered.register(s, select.POLLIN)
    try:
        s.sendall(
            request(
                "/v1/attachments",
                token,
                method="POST",
                extra=f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
                f"Content-Length: {len(body)}\r\n",
            )
        )
        view = memoryview(body)
        while view:
            if answered.poll(0):
                break
            sent = s.send(view[:65536])
            view = view[sent:]
    except OSError:
        pass
    try:
        r = read_head(s, time.monotonic() + timeout)
    except OSError:
        r = None
    finally:
        s.close()
    took = time.monotonic() - started
    if r is None:
        return None, b"", took
    return r[0], r[2], took


def metric(port, token, name):
    """A gauge's value from /metrics, or None."""
    try:
        s = connect(port)
        s.sendall(request("/metrics", token))
        r = read_head(s, time.monotonic() + 3)
        s.close()
    except OSError:
        return None
    if r is None or r[0] != 200:
        return None
    for line in r[2].decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def attack(args):
    heads = Attacker(
        "heads", args.port, "127.0.0.2", 800, head_opening(), b"a", every=3.0
    )
    trickle = Attacker(
        "trickle",
        args.port,
        "127.0.0.3",
        784,
        upload_opening(args.trudy, 20 * 1024 * 1024),
        b"x",
        every=3.0,
    )
    heads.thread.start()
    trickle.thread.start()
    time.sleep(WARM_UP_SECONDS)
    latencies, statuses, uploads = [], {}, {}
    most_connections = 0
    started = time.monotonic()
    next_upload = started
    next_metrics = started
    while time.monotonic() - started < ATTACK_SECONDS:
        t0 = time.monotonic()
        try:
            s = connect(args.port, timeout=5)
            s.sendall(request("/v1/contacts/me", args.alice))
            r = read_head(s, t0 + 5)
            s.close()
        except OSError:
            r = None
        took = time.monotonic() - t0
        status = r[0] if r else None
        statuses[status] = statuses.get(status, 0) + 1
        latencies.append(took)
        if time.monotonic() >= next_upload:
            next_upload += 5
            status, body, _ = upload(args.port, args.alice, "victim.txt", b"hello " * 100, timeout=5)
            uploads[status] = uploads.get(status, 0) + 1
        if time.monotonic() >= next_metrics:
            next_metrics += 1
            open_now = metric(args.port, args.alice, "confab_connections_open")
            if open_now is not None:
                most_connections = max(most_connections, int(open_now))
        time.sleep(max(0.0, 0.2 - (time.monotonic() - t0)))
    heads.stop.set()
    trickle.stop.set()
    heads.thread.join(10)
    trickle.thread.join(10)
    total = sum(statuses.values())
    print(
        f"     heads: up to {heads.most_open} of 800 sockets open from 127.0.0.2, "
        f"{heads.opened} opened in {ATTACK_SECONDS + WARM_UP_SECONDS} s; answers: {heads.answers}",
        flush=True,
    )
    print(
        f"     trickle: up to {trickle.most_open} of 784 uploads open from 127.0.0.3, "
        f"{trickle.opened} opened; answers: {trickle.answers}",
        flush=True,
    )
    print(
        f"     server: at most {most_connections} connections open during the attack "
        f"(its budget: {args.budget})",
        flush=True,
    )
    print(
        f"     victim: {statuses.get(200, 0)} of {total} requests served (statuses {statuses}), "
        f"p50 {percentile(latencies, 50) * 1000:.1f} ms, p99 {percentile(latencies, 99) * 1000:.1f} ms, "
        f"max {max(latencies) * 1000:.1f} ms; uploads {uploads}",
        flush=True,
    )
    check(total >= 50 and statuses.get(200, 0) == total, f"the victim's {total} requests all served")
    check(percentile(latencies, 99) < 1.0, "the victim's p99 stays under 1 s")
    check(set(uploads) == {201}, f"the victim's uploads all stored ({uploads})")
    refused_heads = sum(n for k, n in heads.answers.items() if "too_many_connections" in k)
    check(refused_heads > 0, "heads past the address's share are refused as accepted (429)")
    cut = trickle.answers.get("408 request_timeout", 0)
    refused = sum(
        n
        for k, n in trickle.answers.items()
        if any(c in k for c in ("too_many_uploads", "too_many_connections", "rate_limited"))
    )
    check(cut > 0, f"trickled uploads are cut (408: {cut})")
    check(refused > 0, f"uploads past the contact's share are refused (429: {refused})")
    check(
        0 < most_connections < args.budget,
        f"the attackers never fill the connection budget (/metrics: {most_connections or 'none'})",
    )


def quota(args):
    """20 files of 5 MiB from one contact, 4 at a time (its share of
    uploads under way): its quota of 30 MiB keeps 6, the rest are 413
    storage_quota naming its use."""
    data = bytes(5 * 1024 * 1024)
    results = []
    lock = threading.Lock()
    names = iter(range(20))
    started = time.monotonic()

    def worker():
        while True:
            with lock:
                i = next(names, None)
            if i is None:
                return
            status, body, _ = upload(args.port, args.mallory, f"big{i}.bin", data)
            with lock:
                results.append((status, error_code(body), body))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    took = time.monotonic() - started
    stored = sum(1 for r in results if r[0] == 201)
    refused = [r for r in results if r[0] == 413 and r[1] == "storage_quota"]
    stored_bytes = metric(args.port, args.alice, "confab_stored_file_bytes")
    stored_bytes = None if stored_bytes is None else int(stored_bytes)
    print(
        f"     quota: {stored} of 20 files of 5 MiB stored, {len(refused)} refused 413 "
        f"storage_quota, in {took:.1f} s; /metrics confab_stored_file_bytes {stored_bytes}",
        flush=True,
    )
    if refused:
        print(f"     quota message: {json.loads(refused[0][2])['message']}", flush=True)
    check(stored == 6 and len(refused) == 14, "a contact's uploads stop at its quota (6 of 20)")
    check(
        bool(refused) and "31457280 bytes" in json.loads(refused[0][2])["message"],
        "the refusal names the contact's use and limit",
    )
    status, _, _ = upload(args.port, args.alice, "after.txt", b"still room")
    check(status == 201, "another contact still uploads")
