"""What SQLite's `PRAGMA secure_delete = ON` costs a send (docs/reliability.md,
"What a deletion leaves in the files").

On a database the binary migrated (its real schema and indexes), in WAL mode
with `synchronous = FULL` as the server runs it, this repeats a send's writes
(a message row, its conversation's counters, an event and its two
recipients), and every tenth time a deletion (a message, as deletions do),
N times with secure_delete OFF and then ON, each on a fresh copy; prints the
mean time of one send's writes each way.

    target/debug/confab migrate   # with DATABASE_URL=/tmp/db.sqlite
    python3 bench/secure_delete.py /tmp/db.sqlite [N]
"""

import shutil
import sqlite3
import sys
import tempfile
import time
import uuid


def run(template, secure, n):
    path = tempfile.mktemp(suffix=".db")
    shutil.copy(template, path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute(f"PRAGMA secure_delete = {'ON' if secure else 'OFF'}")
    me, peer, conv = (str(uuid.uuid4()) for _ in range(3))
    db.execute("INSERT INTO conversations (id, creator_id, peer_id, last_active_at, activity_at, "
               "created_at, message_seq, deleted_count) VALUES (?, ?, ?, 0, 0, 0, 0, 0)",
               (conv, me, peer))
    body = "hello, this is a message of a usual length for a chat " * 2
    sent = []
    started = time.perf_counter()
    for i in range(1, n + 1):
        m, e = str(uuid.uuid4()), str(uuid.uuid4())
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO messages (id, conversation_id, sender_id, body, created_at, "
                   "direct_creator_id, direct_peer_id, seq, reply_count, body_folded) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
                   (m, conv, me, body, i, me, peer, i, body))
        db.execute("UPDATE conversations SET message_seq = message_seq + 1, last_active_at = ?, "
                   "activity_at = ? WHERE id = ?", (i, i, conv))
        db.execute("INSERT INTO events (id, position, type, actor_id, created_at, payload, "
                   "conversation_id, message_id) VALUES (?, ?, 'message.created', ?, ?, ?, ?, ?)",
                   (e, i, me, i, '{"message":"' + body + '"}', conv, m))
        for c in (me, peer):
            db.execute("INSERT INTO event_recipients (contact_id, position, event_id) VALUES (?, ?, ?)",
                       (c, i, e))
        if i % 10 == 0:
            db.execute("DELETE FROM messages WHERE id = ?", (sent.pop(0),))
        db.execute("COMMIT")
        sent.append(m)
    took = (time.perf_counter() - started) / n
    db.close()
    for suffix in ("", "-wal", "-shm"):
        try:
            __import__("os").remove(path + suffix)
        except FileNotFoundError:
            pass
    return took


def main():
    template = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    off = [run(template, False, n) for _ in range(3)]
    on = [run(template, True, n) for _ in range(3)]
    off, on = min(off), min(on)
    print(f"secure_delete OFF: {off * 1e6:.0f} us a send; ON: {on * 1e6:.0f} us "
          f"({(on / off - 1) * 100:+.1f} %), best of 3 runs of {n}")


if __name__ == "__main__":
    main()
