"""A big erase under load (see erase.sh).

Seeds a contact with a big history (BULK messages: most in a direct
conversation, the rest in a group, copied by SQL from one real send, the
fast way), then erases it over the server API while two other contacts
send to each other without pause. Checks: the erase answers at once (202
with a job, or 204), the contact's token is refused within 5 s, the job
finishes (after the server is killed mid-job and started again, when
--restart-cmd is given), nothing of the contact is left, and the other
contacts' sends were all served; prints their p50/p99.

Only the standard library. Exits 1 when a check fails.
"""

import argparse
import http.client
import json
import subprocess
import sys
import threading
import time


class Api:
    """One keep-alive connection; `auth` is a token or a server key."""

    def __init__(self, port, auth):
        self.port = port
        self.headers = {"Authorization": f"Bearer {auth}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def raw(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        try:
            self.conn.request(method, path, body=data, headers=self.headers)
            resp = self.conn.getresponse()
            return resp.status, resp.read(), resp
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            raise

    def call(self, method, path, body=None, expect=(200, 201)):
        for attempt in range(5):
            try:
                status, raw, _ = self.raw(method, path, body)
            except (http.client.HTTPException, OSError):
                if attempt == 4:
                    raise
                time.sleep(0.2)
                continue
            if status == 429:
                time.sleep(1)
                continue
            if status not in expect:
                raise SystemExit(f"erase: {method} {path}: {status} {raw[:300]!r}")
            return json.loads(raw) if raw else None
        raise SystemExit(f"erase: {method} {path}: rate limited")


def fail(why):
    print(f"erase: FAIL: {why}", file=sys.stderr)
    sys.exit(1)


def run_sql(a, sql):
    """Runs one statement on the server's database; its one value, if any."""
    if a.store == "postgres":
        out = subprocess.run(["psql", a.db, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                             check=True, capture_output=True, text=True).stdout
        return out.strip()
    import sqlite3
    db = sqlite3.connect(a.db, timeout=60)
    try:
        row = db.execute(sql).fetchone()
        db.commit()
        return str(row[0]) if row else ""
    finally:
        db.close()


def contact(api, name):
    c = api.call("POST", "/v1/admin/contacts", {"username": name, "phone_number": "+15550100200"})
    t = api.call("POST", f"/v1/admin/contacts/{c['id']}/tokens", {})
    return c["id"], t["token"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--store", choices=("sqlite", "postgres"), required=True)
    p.add_argument("--db", required=True, help="the SQLite file, or the PostgreSQL URL")
    p.add_argument("--bulk", type=int, default=60000)
    p.add_argument("--restart-cmd", help="a shell command that kills the server and starts it again")
    p.add_argument("--job-timeout", type=float, default=150)
    a = p.parse_args()

    admin = Api(a.port, a.key)
    victim, victim_token = contact(admin, "erased")
    peer, peer_token = contact(admin, "peer")
    other, other_token = contact(admin, "other")
    friend, friend_token = contact(admin, "friend")
    me = Api(a.port, victim_token)
    direct = me.call("POST", "/v1/conversations", {"contact_id": peer})["id"]
    group = me.call("POST", "/v1/groups", {"name": "big", "contact_ids": [peer]})["id"]
    talk = me.call("POST", "/v1/conversations", {"group_id": group})["id"]
    first_direct = me.call("POST", "/v1/messages", {"conversation_id": direct, "message": "erased-text"})["id"]
    first_group = me.call("POST", "/v1/messages", {"conversation_id": talk, "message": "erased-text"})["id"]
    in_group = a.bulk // 10
    started = time.monotonic()
    for template, n in ((first_direct, a.bulk - in_group - 2), (first_group, in_group)):
        if a.store == "postgres":
            uuid, series = "gen_random_uuid()", f"generate_series(1, {n}) i"
            prefix = ""
        else:
            h = "lower(hex(randomblob(16)))"
            uuid = ("substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || "
                    "substr(h, 17, 4) || '-' || substr(h, 21, 12)")
            prefix = (f"WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < {n}), "
                      f"r(i, h) AS (SELECT i, {h} FROM g) ")
            series = "r"
        run_sql(a, f"""{prefix}INSERT INTO messages (id, conversation_id, sender_id, body, created_at,
    direct_creator_id, direct_peer_id, group_id, seq, reply_count, body_folded)
SELECT {uuid}, conversation_id, sender_id, body, created_at + i, direct_creator_id,
    direct_peer_id, group_id, seq + i, 0, body_folded
FROM messages, {series} WHERE id = '{template}'""")
        run_sql(a, f"""UPDATE conversations SET message_seq = message_seq + {n}
WHERE id = (SELECT conversation_id FROM messages WHERE id = '{template}')""")
    print(f"erase: seeded {a.bulk} messages in {time.monotonic() - started:.1f} s")

    # Two other contacts send to each other all along.
    chat = Api(a.port, other_token).call("POST", "/v1/conversations", {"contact_id": friend})["id"]
    latencies, failures, stop = [], [], threading.Event()

    def sender(token):
        api = Api(a.port, token)
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                status, raw, _ = api.raw("POST", "/v1/messages", {"conversation_id": chat, "message": "hello"})
            except (http.client.HTTPException, OSError) as e:
                if not restarting.is_set():
                    failures.append(repr(e))
                time.sleep(0.05)
                continue
            if status == 201:
                latencies.append(time.monotonic() - t0)
            elif status == 429:
                time.sleep(0.2)
            elif not (restarting.is_set() and status >= 500):
                failures.append(f"{status} {raw[:200]!r}")
            time.sleep(0.05)

    restarting = threading.Event()
    threads = [threading.Thread(target=sender, args=(t,), daemon=True)
               for t in (other_token, friend_token)]
    for t in threads:
        t.start()
    time.sleep(1)

    asked = time.monotonic()
    # A fresh connection (an idle one may have been closed).
    admin = Api(a.port, a.key)
    status, raw, resp = admin.raw("DELETE", f"/v1/admin/contacts/{victim}")
    answered = time.monotonic() - asked
    print(f"erase: DELETE answered {status} in {answered * 1000:.0f} ms")
    if status not in (202, 204):
        fail(f"the erase answered {status}: {raw[:300]!r}")
    if answered > 3:
        fail(f"the erase took {answered:.1f} s to answer")
    # The token is refused within 5 s.
    while True:
        s, _, _ = Api(a.port, victim_token).raw("GET", "/v1/contacts/me")
        if s == 401:
            break
        if time.monotonic() - asked > 5:
            fail(f"the erased contact's token still answers {s} after 5 s")
        time.sleep(0.1)
    print(f"erase: token refused {(time.monotonic() - asked) * 1000:.0f} ms after the request")
    if status == 202:
        job = json.loads(raw)
        location = resp.getheader("Location")
        if location != f"/v1/admin/jobs/{job['id']}":
            fail(f"Location {location!r} for job {job['id']}")
        if a.restart_cmd:
            time.sleep(2)
            restarting.set()
            subprocess.run(a.restart_cmd, shell=True, check=True)
            admin = Api(a.port, a.key)
            time.sleep(1)
            restarting.clear()
            print("erase: server killed and started again mid-job")
        while True:
            try:
                job = admin.call("GET", location)
            except (http.client.HTTPException, OSError):
                time.sleep(0.5)
                continue
            if job["state"] == "succeeded":
                break
            if time.monotonic() - asked > a.job_timeout:
                fail(f"the job did not finish in {a.job_timeout} s: {job}")
            time.sleep(0.5)
        print(f"erase: job finished {time.monotonic() - asked:.1f} s after the request, "
              f"{job['batches_done']} batches (since its last start)")
    stop.set()
    for t in threads:
        t.join()

    left = [run_sql(a, q) for q in (
        f"SELECT COUNT(*) FROM messages WHERE sender_id = '{victim}'",
        f"SELECT COUNT(*) FROM contacts WHERE id = '{victim}'",
        "SELECT COUNT(*) FROM messages WHERE body = 'erased-text'",
    )]
    if any(n != "0" for n in left):
        fail(f"left behind (messages sent, contact, texts): {left}")
    if failures:
        fail(f"{len(failures)} sends by others failed, e.g. {failures[:3]}")
    if not latencies:
        fail("no send by others was served")
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(f"erase: others' sends meanwhile: {len(latencies)} served, p50 {p50:.0f} ms, p99 {p99:.0f} ms")
    if p99 > 2000:
        fail(f"others' sends p99 {p99:.0f} ms > 2000 ms")


if __name__ == "__main__":
    main()
    sys.exit(0)
