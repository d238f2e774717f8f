"""Hostile clients against a running confab (see run.sh beside this file).

Raw sockets throughout: what is tested is what a well-behaved HTTP library
would hide (streams held open, connections never used, bodies trickled or
sent on after a refusal). Each check prints one line; the exit status is
the number of failed checks (0: all passed).
"""

import argparse
import json
import selectors
import socket
import sys
import threading
import time

# load.py imports this module by name: let it find this very one (and
# its FAILED list) when it runs as the script.
sys.modules.setdefault("hostile", sys.modules[__name__])

FAILED = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILED.append(what)


def connect(port, timeout=3.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def request(path, token=None, method="GET", extra=""):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return f"{method} {path} HTTP/1.1\r\nHost: confab\r\n{auth}{extra}\r\n".encode()


def read_head(sock, deadline):
    """Reads a response head and, when it has a Content-Length, its body.
    Returns (status, headers dict, body bytes), or None on timeout/close."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, OSError):
            return None
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0") or 0)
    while len(rest) < length:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, OSError):
            break
        if not chunk:
            break
        rest += chunk
    return status, headers, rest[:length]


def error_code(body):
    try:
        v = json.loads(body)
    except ValueError:
        return None
    if not all(k in v for k in ("type", "code", "message", "param")):
        return None
    return v["code"]


def closed_within(sock, seconds):
    """Whether the peer closes the connection within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except OSError:
            return True
    return False


def streams(args):
    """At most 10 streams per contact, whichever of its tokens."""
    held = []
    ok = 0
    for _ in range(10):
        s = connect(args.port)
        s.sendall(request("/v1/events", args.mallory, extra="Accept: text/event-stream\r\n"))
        r = read_head(s, time.monotonic() + 3)
        ok += r is not None and r[0] == 200
        held.append(s)
    check(ok == 10, f"10 streams of one contact open ({ok} answered 200)")
    for token, name in ((args.mallory, "same token"), (args.mallory2, "another token")):
        s = connect(args.port)
        s.sendall(request("/v1/events", token, extra="Accept: text/event-stream\r\n"))
        r = read_head(s, time.monotonic() + 3)
        check(
            r is not None and r[0] == 429 and error_code(r[2]) == "too_many_streams",
            f"an 11th stream ({name}) is 429 too_many_streams (got {r and (r[0], r[2][:80])})",
        )
        s.close()
    s = connect(args.port)
    s.sendall(request("/v1/events", args.alice, extra="Accept: text/event-stream\r\n"))
    r = read_head(s, time.monotonic() + 3)
    check(r is not None and r[0] == 200, "another contact's stream opens")
    held.append(s)
    return held


def flood(args):
    """Far more connections than descriptors: fast 503s past the budget,
    and what was open keeps working."""
    keeper = connect(args.port)
    keeper.sendall(request("/healthz"))
    r = read_head(keeper, time.monotonic() + 3)
    check(r is not None and r[0] == 200, "a connection opened before the flood answers")

    # The server closes a connection idle for 5 s (keep-alive): the
    # connection opened before the flood stays in use while it builds up,
    # as a client's would.
    last_ping = [time.monotonic()]
    keeper_ok = [True]

    def keep_alive():
        if time.monotonic() - last_ping[0] < 1:
            return
        keeper.sendall(request("/healthz"))
        r = read_head(keeper, time.monotonic() + 2)
        keeper_ok[0] = keeper_ok[0] and r is not None and r[0] == 200
        last_ping[0] = time.monotonic()

    count = args.nofile * 2
    socks = []
    refused_connects = 0
    for i in range(count):
        keep_alive()
        try:
            s = socket.socket()
            s.setblocking(False)
            # From many addresses (4 sockets each, within an address's
            # share): what is tested here is the whole budget.
            s.bind((flood_source(i), 0))
            s.connect_ex(("127.0.0.1", args.port))
            socks.append(s)
        except OSError:
            refused_connects += 1
    time.sleep(0.3)
    sent_at = {}
    # When each answer arrived: epoll is asked after every send, so an
    # answer is timed when it reaches this process, not when this loop
    # (slow on a busy machine) gets round to reading it.
    answered_at = {}
    arrivals = selectors.DefaultSelector()

    def note_arrivals(timeout):
        for key, _ in arrivals.select(timeout):
            answered_at[key.fileobj] = time.monotonic()
            arrivals.unregister(key.fileobj)

    for s in socks:
        keep_alive()
        try:
            s.setblocking(True)
            s.settimeout(1)
            # Mallory's: alice's own allowance stays for the open
            # connection's checks below.
            s.sendall(request("/v1/contacts/me", args.mallory))
            sent_at[s] = time.monotonic()
            arrivals.register(s, selectors.EVENT_READ)
        except OSError:
            pass
        note_arrivals(0)
    check(keeper_ok[0], "while the flood builds up, the open connection's /healthz answers")
    # While the flood is in: the open connection still answers at once.
    for path, token in (("/healthz", None), ("/readyz", None), ("/v1/contacts/me", args.alice)):
        note_arrivals(0)
        started = time.monotonic()
        keeper.sendall(request(path, token))
        r = read_head(keeper, started + 2)
        took = time.monotonic() - started
        check(
            r is not None and r[0] == 200 and took < 1.0,
            f"during the flood {path} on an open connection: {r and r[0]} in {took * 1000:.0f} ms",
        )
    served, fast_503, slow_503, silent, limited = 0, 0, 0, 0, 0
    other = {}
    bad_bodies = 0
    deadline = time.monotonic() + 3
    while arrivals.get_map() and time.monotonic() < deadline:
        note_arrivals(0.05)
    arrivals.close()
    for s, at in sent_at.items():
        r = read_head(s, max(deadline, time.monotonic() + 0.05))
        if r is None:
            silent += 1
        elif r[0] == 200:
            served += 1
        elif r[0] == 503:
            if error_code(r[2]) != "unavailable":
                bad_bodies += 1
            if answered_at.get(s, time.monotonic()) - at < 1.5:
                fast_503 += 1
            else:
                slow_503 += 1
        elif r[0] == 429 and error_code(r[2]) == "rate_limited":
            # Every flood request is mallory's: past its burst, its own
            # rate limit answers.
            limited += 1
        else:
            other[r[0]] = other.get(r[0], 0) + 1
    print(
        f"     flood of {count}: {served} served, {limited} rate-limited, {fast_503} fast 503, "
        f"{slow_503} slow 503, "
        f"{other} other, {silent} waiting (not accepted), {refused_connects} refused connects",
        flush=True,
    )
    check(fast_503 > 0, "connections past the budget get a fast 503")
    check(bad_bodies == 0, "every 503 carries the contract's error body")
    # A connection past what the server accepts waits in the kernel's
    # queue; when that queue overflows, its request is retransmitted later
    # and may reach the server after actix's 5 s head timeout, which
    # answers 408 by itself (docs/api.md, "What the HTTP/1 parser answers
    # by itself"). Anything else is a failure.
    check(set(other) <= {408}, f"no answers but 200, 503 and the parser's 408 ({other})")
    for s in socks:
        s.close()
    # The server recovers once the flood is gone.
    deadline = time.monotonic() + 15
    recovered = False
    while time.monotonic() < deadline and not recovered:
        try:
            s = connect(args.port, timeout=2)
            s.sendall(request("/v1/contacts/me", args.alice))
            r = read_head(s, time.monotonic() + 2)
            recovered = r is not None and r[0] == 200
            s.close()
        except OSError:
            pass
        if not recovered:
            time.sleep(0.2)
    check(recovered, "after the flood a new connection is served")
    keeper.close()


def flood_source(i):
    """The i-th flood socket's source address: 127.0.<1..>.<1..254>, four
    sockets each."""
    n = i // 4
    return f"127.0.{1 + n // 254}.{1 + n % 254}"


def trickle(args, results):
    s = connect(args.port, timeout=20)
    s.sendall(
        request(
            "/v1/conversations",
            args.alice,
            method="POST",
            extra="Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n",
        )
        + b"contact_id="
    )
    started = time.monotonic()
    stop = threading.Event()

    def drip():
        while not stop.is_set():
            time.sleep(1)
            try:
                s.send(b"a")
            except OSError:
                return

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    r = read_head(s, started + 15)
    took = time.monotonic() - started
    stop.set()
    results["trickle"] = (r, took, closed_within(s, 2))
    s.close()


def refusals(args):
    cases = (
        (None, "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n", 401, "unauthorized"),
        (args.alice, "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 300000000\r\n", 413, "payload_too_large"),
        (args.alice, "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n", 415, "unsupported_media_type"),
    )
    chunk = b"1000\r\n" + b"a" * 0x1000 + b"\r\n"
    for token, framing, want, code in cases:
        s = connect(args.port)
        s.sendall(request("/v1/messages", token, method="POST", extra=framing))
        started = time.monotonic()
        sent = 0
        stop = threading.Event()

        def pump():
            nonlocal sent
            while not stop.is_set() and time.monotonic() - started < 5:
                try:
                    s.sendall(chunk)
                    sent += len(chunk)
                except OSError:
                    return

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        r = read_head(s, started + 3)
        closed = closed_within(s, 2)
        took = time.monotonic() - started
        stop.set()
        t.join(6)
        check(
            r is not None and r[0] == want and error_code(r[2]) == code,
            f"a body after the head of a {want} request: {r and (r[0], r[2][:60])}",
        )
        check(closed and took < 3, f"the {want}'s connection closes at once ({took:.1f} s, {sent} bytes sent)")
        s.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--mallory", required=True)
    p.add_argument("--mallory2", required=True)
    p.add_argument("--alice", required=True)
    p.add_argument("--trudy", required=True)
    p.add_argument("--nofile", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--store", required=True)
    args = p.parse_args()
    # The server's budget for this limit (ConnectionLimits::from_open_files).
    usable = args.nofile - max(64, args.nofile // 8)
    args.budget = (usable - usable // 8) // 2
    print(f"hostile: {args.store}, {args.nofile} descriptors, a budget of {args.budget}", flush=True)

    held = streams(args)
    results = {}
    slow = threading.Thread(target=trickle, args=(args, results))
    slow.start()
    refusals(args)
    flood(args)
    slow.join(20)
    r, took, closed = results.get("trickle", (None, 0, False))
    check(
        r is not None and r[0] == 408 and error_code(r[2]) == "request_timeout" and 9 <= took < 13,
        f"a trickled body is 408 request_timeout at 10 s (got {r and r[0]} after {took:.1f} s)",
    )
    check(closed, "the 408's connection closes")
    import load

    load.attack(args)
    load.quota(args)
    for s in held:
        s.close()
    with open(f"/proc/{args.pid}/status") as f:
        hwm = next((l.split()[1] for l in f if l.startswith("VmHWM")), "?")
    print(f"     server peak RSS: {hwm} kB", flush=True)
    print(f"hostile: {args.store}: {len(FAILED)} failed", flush=True)
    raise SystemExit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
