"""What the topology checks share (Python 3, standard library only): an HTTP
client that can pin a request to one instance behind the balancer, an
event-stream reader, the processes (confab instances, HAProxy, nats-server)
and the verdicts.

Every process started here is written to $TOPO_WORK/pids as soon as it
starts, so that run.sh's cleanup stops it even if this Python dies.
"""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

REQUEST_TIMEOUT = 15.0
# The header HAProxy adds to every answer it relays: which server answered.
INSTANCE_HEADER = "x-confab-instance"
# A request carrying this header is sent to that server while it is up.
PIN_HEADER = "X-Confab-Pin"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def percentile(values, p):
    """The nearest-rank percentile (p in 0..100) of values, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil without floats
    return ordered[int(rank) - 1]


def ms(seconds):
    return "n/a" if seconds is None else f"{seconds * 1000:.1f} ms"


# ---------------------------------------------------------------- verdicts


class Report:
    """Prints one line per check and decides the exit status.

    expected: {check name: what the server must still do}. A listed check
    that fails is EXPECTED-FAIL; one that passes is UNEXPECTED-PASS, which
    fails the run when strict (run.sh --expect-missing) and is otherwise
    only reported, so that the list can be trimmed.
    """

    def __init__(self, expected, strict=False):
        self.expected = expected
        self.strict = strict
        self.failed = []
        self.unexpected_passes = []
        self.counts = {}
        self.lock = threading.Lock()

    def line(self, verdict, name, detail):
        with self.lock:
            self.counts[verdict] = self.counts.get(verdict, 0) + 1
            print(f"{verdict:<15} {name:<34} {detail}", flush=True)

    def result(self, name, ok, detail):
        if name in self.expected:
            if ok:
                self.line("UNEXPECTED-PASS", name, f"{detail} [listed as {self.expected[name]}: remove it from EXPECTED_TO_FAIL]")
                self.unexpected_passes.append(name)
                if self.strict:
                    self.failed.append(name)
            else:
                self.line("EXPECTED-FAIL", name, f"{detail} [{self.expected[name]}]")
        elif ok:
            self.line("PASS", name, detail)
        else:
            self.line("FAIL", name, detail)
            self.failed.append(name)

    def summary(self):
        kinds = ("PASS", "FAIL", "EXPECTED-FAIL", "UNEXPECTED-PASS")
        counts = ", ".join(f"{self.counts.get(k, 0)} {k}" for k in kinds)
        extra = f"; failed: {' '.join(self.failed)}" if self.failed else ""
        print(f"topology checks: {counts}{extra}", flush=True)

    def info(self, name, detail):
        self.line("INFO", name, detail)

    def figure(self, name, detail):
        self.line("FIGURE", name, detail)

    def run(self, name, fn, *args):
        """Runs one check: fn returns (ok, detail); an exception fails it."""
        try:
            ok, detail = fn(*args)
        except Exception as e:  # a broken check is a failed check
            ok, detail = False, f"raised {type(e).__name__}: {e}"
        self.result(name, ok, detail)
        return ok


# ---------------------------------------------------------------- HTTP


class Resp:
    def __init__(self, status, headers, body, error=None):
        self.status = status
        self.headers = headers or {}
        self.body = body or b""
        self.error = error

    @property
    def instance(self):
        return self.headers.get(INSTANCE_HEADER)

    def json(self):
        return json.loads(self.body.decode())

    def text(self):
        return self.body.decode(errors="replace")

    def __repr__(self):
        if self.status is None:
            return f"<no answer: {self.error}>"
        return f"<{self.status} via {self.instance}: {self.text()[:200]}>"


class Api:
    """HTTP/1.1 to one address, a kept-alive connection per thread."""

    def __init__(self, base, timeout=REQUEST_TIMEOUT):
        parsed = urllib.parse.urlsplit(base)
        self.base = base.rstrip("/")
        self.host, self.port = parsed.hostname, parsed.port
        self.timeout = timeout
        self.local = threading.local()

    def _conn(self):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self.local.conn = conn
            self.local.used = False
        return conn

    def _drop(self):
        conn = getattr(self.local, "conn", None)
        if conn is not None:
            conn.close()
        self.local.conn = None

    def request(self, method, path, token=None, form=None, json_body=None, body=None,
                content_type=None, headers=None, pin=None, key=None):
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = "Bearer " + token
        if pin:
            hdrs[PIN_HEADER] = pin
        if key:
            hdrs["Idempotency-Key"] = key
        if form is not None:
            body = urllib.parse.urlencode(form, doseq=True).encode()
            content_type = "application/x-www-form-urlencoded"
        elif json_body is not None:
            body = json.dumps(json_body).encode()
            content_type = "application/json"
        if content_type:
            hdrs["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._conn()
            reused = self.local.used
            try:
                conn.request(method, path, body=body, headers=hdrs)
                resp = conn.getresponse()
                data = resp.read()
                self.local.used = True
                out = Resp(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
                if resp.will_close:
                    self._drop()
                return out
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                self._drop()
                # A kept-alive connection the other side had closed: once
                # more on a new one (what every HTTP client does).
                if reused and attempt == 1:
                    continue
                return Resp(None, None, None, repr(e))
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                return Resp(None, None, None, repr(e))
        return Resp(None, None, None, "unreachable")

    def get(self, path, token=None, **kw):
        return self.request("GET", path, token=token, **kw)

    def post(self, path, token=None, **kw):
        return self.request("POST", path, token=token, **kw)


def multipart(filename, data, content_type="application/octet-stream"):
    """A multipart/form-data body with one part `file`: (body, content type)."""
    boundary = "topology" + uuid.uuid4().hex
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head + data + tail, f"multipart/form-data; boundary={boundary}"


# ---------------------------------------------------------------- event streams


class Frame:
    __slots__ = ("t", "event", "id", "data", "instance", "connection")

    def __init__(self, t, event, id_, data, instance, connection):
        self.t, self.event, self.id, self.data = t, event, id_, data
        self.instance, self.connection = instance, connection


class Stream(threading.Thread):
    """GET /v1/events as Server-Sent Events, read on a thread of its own.

    Every frame is kept with the monotonic time it was read. With
    reconnect=True, a stream that ends is opened again (through the
    balancer, unpinned) with Last-Event-ID set to the last id received, as a
    browser's EventSource does; each connection's instance and status are in
    `connections`.
    """

    def __init__(self, api, token, pin=None, reconnect=False, last_event_id=None, name="stream"):
        super().__init__(daemon=True, name=name)
        self.api, self.token, self.pin = api, token, pin
        self.reconnect = reconnect
        self.last_id = last_event_id
        self.frames = []
        self.connections = []  # dicts: t, status, instance, connected_at, ended_at, reason
        self.cond = threading.Condition()
        self.stopping = False
        self.sock = None

    # -- reading

    def run(self):
        pin = self.pin
        while not self.stopping:
            info = {"t": time.monotonic(), "status": None, "instance": None,
                    "connected_at": None, "ended_at": None, "reason": None}
            with self.cond:
                self.connections.append(info)
            try:
                self._one(pin, info)
            except Exception as e:  # the connection ended, one way or another
                info["reason"] = info["reason"] or repr(e)
            info["ended_at"] = time.monotonic()
            with self.cond:
                self.cond.notify_all()
            if not self.reconnect or self.stopping:
                break
            pin = None  # a reconnect goes wherever the balancer sends it
            time.sleep(0.1)

    def _one(self, pin, info):
        conn = http.client.HTTPConnection(self.api.host, self.api.port, timeout=60)
        headers = {"Authorization": "Bearer " + self.token, "Accept": "text/event-stream"}
        if pin:
            headers[PIN_HEADER] = pin
        if self.last_id:
            headers["Last-Event-ID"] = self.last_id
        conn.request("GET", "/v1/events", headers=headers)
        self.sock = conn.sock
        resp = conn.getresponse()
        info["status"] = resp.status
        info["instance"] = resp.getheader(INSTANCE_HEADER)
        if resp.status != 200:
            info["reason"] = resp.read(2000).decode(errors="replace")
            conn.close()
            return
        index = len(self.connections) - 1
        event, id_, data = None, None, []
        while not self.stopping:
            raw = resp.readline()
            if not raw:
                info["reason"] = info["reason"] or "end of stream"
                break
            line = raw.decode().rstrip("\r\n")
            if line == "":
                if data or event:
                    self._dispatch(event, id_, "\n".join(data), info["instance"], index)
                event, id_, data = None, None, []
            elif line.startswith(":"):
                comment = line[1:].strip()
                if comment == "connected":
                    info["connected_at"] = time.monotonic()
                    with self.cond:
                        self.cond.notify_all()
                elif comment.startswith("stream ended"):
                    info["reason"] = comment
            else:
                field, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if field == "event":
                    event = value
                elif field == "id":
                    id_ = value
                elif field == "data":
                    data.append(value)
        conn.close()

    def _dispatch(self, event, id_, data, instance, index):
        t = time.monotonic()
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = data
        with self.cond:
            self.frames.append(Frame(t, event, id_, parsed, instance, index))
            if id_:
                self.last_id = id_
            self.cond.notify_all()

    # -- waiting

    def wait_connected(self, timeout=10.0, connection=None):
        """Until a connection (the latest by default) said `: connected`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                conns = self.connections
                if conns:
                    c = conns[-1] if connection is None else (conns[connection] if connection < len(conns) else None)
                    if c is not None:
                        if c["connected_at"] is not None:
                            return c
                        if c["ended_at"] is not None and not self.reconnect:
                            return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def wait_for(self, predicate, timeout):
        """Until predicate(frames) is true; its value, or None on timeout."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = predicate(self.frames)
                if got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def snapshot(self):
        with self.cond:
            return list(self.frames)

    def messages(self):
        """{message text: [frames]} of message.created events."""
        out = {}
        for f in self.snapshot():
            if f.event == "message.created" and isinstance(f.data, dict):
                out.setdefault(f.data["payload"].get("message"), []).append(f)
        return out

    def stop(self):
        self.stopping = True
        sock = self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.join(5)


def open_stream(api, token, pin=None, reconnect=False, name="stream", timeout=10.0):
    s = Stream(api, token, pin=pin, reconnect=reconnect, name=name)
    s.start()
    c = s.wait_connected(timeout)
    if c is None:
        info = s.connections[-1] if s.connections else {}
        s.stop()
        raise RuntimeError(f"the event stream did not open: {info}")
    return s


# ---------------------------------------------------------------- processes


class Procs:
    """Every process the checks start; all stopped by stop_all (and by
    run.sh's cleanup through $TOPO_WORK/pids)."""

    def __init__(self, work):
        self.work = work
        self.pidfile = os.path.join(work, "pids")
        self.procs = []

    def start(self, argv, log, env=None, cwd=None):
        out = open(log, "ab")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             env=env, cwd=cwd, start_new_session=True)
        out.close()
        with open(self.pidfile, "a") as f:
            f.write(f"{p.pid}\n")
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, wait=10.0):
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(wait)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
            except ProcessLookupError:
                pass

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)
        self.procs = []


def log_tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def wait_http(url, timeout, proc=None, expect=200):
    """Until GET url answers `expect`; False on timeout or when proc exits."""
    parsed = urllib.parse.urlsplit(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=2)
            conn.request("GET", parsed.path or "/")
            status = conn.getresponse().status
            conn.close()
            if status == expect:
                return True
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    return False


class Instance:
    """One `confab serve` process on its own port."""

    def __init__(self, ctx, name, env, cwd=None):
        self.ctx, self.name = ctx, name
        self.port = free_port()
        self.env = dict(env)
        self.env["CONFAB_LISTEN"] = f"127.0.0.1:{self.port}"
        self.cwd = cwd or os.path.join(ctx.work, f"instance-{name}-{self.port}")
        os.makedirs(self.cwd, exist_ok=True)
        self.log = os.path.join(self.cwd, "server.log")
        self.proc = None
        self.api = Api(f"http://127.0.0.1:{self.port}")

    def start(self, wait=True, timeout=60.0):
        self.proc = self.ctx.procs.start([self.ctx.bin, "serve"], self.log, env=self.env, cwd=self.cwd)
        if wait and not wait_http(f"http://127.0.0.1:{self.port}/readyz", timeout, self.proc):
            raise RuntimeError(f"instance {self.name} did not become ready; its log:\n{log_tail(self.log)}")
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc is not None:
            self.ctx.procs.stop(self.proc)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def metrics(self):
        r = self.api.get("/metrics")
        return r.text() if r.status == 200 else ""


HAPROXY_CONFIG = """\
global
    maxconn 4096
    pidfile {pidfile}

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    # An event stream is one long answer: it must outlive the server
    # timeout between keep-alive comments (15 s by default).
    timeout server 60s
    timeout tunnel 1h
    timeout http-keep-alive 30s
    timeout http-request 10s
    option redispatch 1
    # Without it HAProxy holds small writes back to fill packets: each
    # event frame of a stream then reaches the client some 100-200 ms late
    # (measured here: p50 130 ms after the send's answer, against 1 ms).
    option http-no-delay
    retries 3
    # Only a connection that never reached a server is tried elsewhere:
    # a request it may have processed is the client's to retry.
    retry-on conn-failure

frontend confab
    bind 127.0.0.1:{port}
    option forwardfor
    default_backend instances

backend instances
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server check inter 500ms fall 2 rise 1
    http-response set-header X-Confab-Instance %s
{pins}
{servers}
"""


class Balancer:
    """A private HAProxy (Debian's) in front of some instances."""

    def __init__(self, ctx, instances, name="lb"):
        self.ctx, self.instances = ctx, instances
        self.port = free_port()
        self.dir = os.path.join(ctx.work, f"{name}-{self.port}")
        os.makedirs(self.dir, exist_ok=True)
        self.cfg = os.path.join(self.dir, "haproxy.cfg")
        self.log = os.path.join(self.dir, "haproxy.log")
        pins = "\n".join(
            f"    use-server {i.name} if {{ req.hdr({PIN_HEADER.lower()}) -m str {i.name} }}" for i in instances
        )
        servers = "\n".join(f"    server {i.name} 127.0.0.1:{i.port}" for i in instances)
        with open(self.cfg, "w") as f:
            f.write(HAPROXY_CONFIG.format(pidfile=os.path.join(self.dir, "haproxy.pid"),
                                          port=self.port, pins=pins, servers=servers))
        self.base = f"http://127.0.0.1:{self.port}"
        self.api = Api(self.base)
        self.proc = None

    def start(self):
        check = subprocess.run(["haproxy", "-c", "-q", "-f", self.cfg], capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise RuntimeError(f"haproxy refuses its configuration: {check.stderr or check.stdout}")
        self.proc = self.ctx.procs.start(["haproxy", "-db", "-f", self.cfg], self.log)
        if not wait_http(self.base + "/healthz", 20, self.proc):
            raise RuntimeError(f"haproxy did not answer; its log:\n{log_tail(self.log)}")
        # Until every instance answers through it when asked for by name.
        deadline = time.monotonic() + 20
        for i in self.instances:
            while True:
                r = self.api.get("/readyz", pin=i.name)
                if r.status == 200 and r.instance == i.name:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"instance {i.name} never answered through haproxy: {r}")
                time.sleep(0.1)
        return self


# ---------------------------------------------------------------- databases and people


def psql(url, sql, db="postgres"):
    out = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", f"{url}/{db}", "-c", sql],
                         capture_output=True, text=True, timeout=60, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"psql {sql!r}: {out.stderr.strip()}")
    return out.stdout.strip()


class Context:
    """What every group of checks gets: the binary, the work directory,
    the private PostgreSQL, the S3 settings."""

    def __init__(self, bin_, work, report):
        self.bin = bin_
        self.work = work
        self.report = report
        self.procs = Procs(work)
        self.primary = os.environ["TOPO_PRIMARY_URL"]
        self.replica = os.environ.get("TOPO_REPLICA_URL")
        self.pg_dir = os.environ.get("TOPO_PG_DIR")
        self.s3_url = os.environ.get("TOPO_S3_URL")
        self.here = os.path.dirname(os.path.abspath(__file__))
        self.run_id = uuid.uuid4().hex[:8]

    def pg(self, *args):
        """tests/topology/pg.sh COMMAND $TOPO_PG_DIR ARGS..."""
        cmd, rest = args[0], args[1:]
        out = subprocess.run([os.path.join(self.here, "pg.sh"), cmd, self.pg_dir, *rest],
                             capture_output=True, text=True, timeout=120, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"pg.sh {cmd}: {out.stderr.strip()}")
        return out.stdout.strip()

    def replica_stats(self, db):
        return json.loads(self.pg("stats", db))

    def database(self, name):
        """A new database on the private primary, migrated: its URL."""
        psql(self.primary, f"DROP DATABASE IF EXISTS {name}")
        psql(self.primary, f"CREATE DATABASE {name}")
        url = f"{self.primary}/{name}"
        self.cli(url, "migrate")
        return url

    def env(self, database_url, **extra):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("CONFAB_") or k == "DATABASE_URL":
                del env[k]
        env.update({
            "DATABASE_URL": database_url,
            "RUST_LOG": "warn",
            "CONFAB_DB_WAIT_SECS": "30",
            "CONFAB_TRUSTED_PROXIES": "127.0.0.1/32",
        })
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def cli(self, database_url, *args):
        out = subprocess.run([self.bin, *args], capture_output=True, text=True, timeout=120,
                             env=self.env(database_url), check=False)
        if out.returncode != 0:
            raise RuntimeError(f"confab {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout.strip()

    def cluster(self, name, database_url, n=3, **extra):
        """n instances (a, b, c, ...) behind their own HAProxy. Their files
        go to one folder they share (as an operator declares it), unless
        extra names a CONFAB_STORAGE_URL."""
        if "CONFAB_STORAGE_URL" not in extra:
            extra["CONFAB_STORAGE_URL"] = "file://" + os.path.join(self.work, f"{name}-files")
            extra["CONFAB_STORAGE_SHARED"] = "true"
        env = self.env(database_url, **extra)
        instances = [Instance(self, chr(ord("a") + i), env) for i in range(n)]
        for i in instances:
            i.start()
        lb = Balancer(self, instances, name=name).start()
        return Cluster(self, instances, lb, database_url)


class Person:
    def __init__(self, name, id_, token):
        self.name, self.id, self.token = name, id_, token


class Cluster:
    def __init__(self, ctx, instances, lb, database_url):
        self.ctx, self.instances, self.lb = ctx, instances, lb
        self.api = lb.api
        self.database_url = database_url
        self.key = json.loads(ctx.cli(database_url, "key", "create", "--name", f"topology-{ctx.run_id}"))["key"]
        self.people = {}

    def by_name(self, name):
        return next(i for i in self.instances if i.name == name)

    def person(self, name):
        """A contact and a token, made through the balancer with the server key."""
        if name in self.people:
            return self.people[name]
        username = f"{name}-{self.ctx.run_id}"
        phone = "+1555" + str(int(uuid.uuid4().int % 10_000_000)).zfill(7)
        r = self.api.post("/v1/admin/contacts", self.key, form={"username": username, "phone_number": phone})
        if r.status != 201:
            raise RuntimeError(f"creating contact {username}: {r}")
        id_ = r.json()["id"]
        r = self.api.post(f"/v1/admin/contacts/{id_}/tokens", self.key, form={})
        if r.status != 201:
            raise RuntimeError(f"minting a token for {username}: {r}")
        p = Person(name, id_, r.json()["token"])
        self.people[name] = p
        return p

    def conversation(self, a, b):
        r = self.api.post("/v1/conversations", a.token, form={"contact_id": b.id}, key=str(uuid.uuid4()))
        if r.status not in (200, 201):
            raise RuntimeError(f"conversation {a.name}-{b.name}: {r}")
        return r.json()["id"]

    def send(self, person, conversation, text, pin=None, key=None):
        return self.api.post("/v1/messages", person.token, pin=pin, key=key or str(uuid.uuid4()),
                             form={"conversation_id": conversation, "message": text})

    def stop(self):
        for p in [self.lb.proc] + [i.proc for i in self.instances]:
            if p is not None:
                self.ctx.procs.stop(p)


def send_until_acked(cluster, person, conversation, text, give_up_after=20.0, pin=None, answers=None):
    """Sends with one Idempotency-Key, retrying any failure that may be
    transient (no answer, 409 in flight, 5xx) until it is acknowledged.
    (Resp of the acknowledgement or the last answer, attempts); answers, a
    dict, counts every answer by status (None: no answer)."""
    key = str(uuid.uuid4())
    deadline = time.monotonic() + give_up_after
    attempts = 0
    while True:
        attempts += 1
        r = cluster.send(person, conversation, text, pin=pin, key=key)
        if answers is not None:
            answers[r.status] = answers.get(r.status, 0) + 1
        if r.status == 201:
            return r, attempts
        if r.status is not None and r.status not in (409, 429, 500, 502, 503, 504):
            return r, attempts
        if time.monotonic() > deadline:
            return r, attempts
        time.sleep(0.05)


def prometheus_lines(text, pattern):
    rx = re.compile(pattern)
    return [line for line in text.splitlines() if line and not line.startswith("#") and rx.search(line.split(" ")[0])]


def die(msg):
    print(f"topology: {msg}", file=sys.stderr)
    sys.exit(2)
