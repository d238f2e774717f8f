"""Local file storage with several instances on one database: a second
instance whose files would be a folder of its own is refused at start
(naming CONFAB_STORAGE_URL), unless the operator says the folder is shared
(CONFAB_STORAGE_SHARED=true). Each instance runs in a directory of its
own, as on a machine of its own; the default storage is `confab-files`
in the working directory."""

import hashlib
import os
import time

from harness import Instance, log_tail, multipart, wait_http


def _upload(api, token, data):
    body, ctype = multipart("local.bin", data)
    return api.post("/v1/attachments", token, body=body, content_type=ctype)


def run(ctx):
    rep = ctx.report
    db = ctx.database(f"topology_local_{ctx.run_id}")
    env = ctx.env(db)
    first = Instance(ctx, "l1", env)
    started = {}

    def lone():
        first.start()
        started["l1"] = True
        return True, "one instance with local files starts (no other instance on the database)"

    if not rep.run("local-files-single-instance", lone):
        return
    key = __import__("json").loads(ctx.cli(db, "key", "create", "--name", "local"))["key"]
    r = first.api.post("/v1/admin/contacts", key, form={"username": f"lf-{ctx.run_id}", "phone_number": "+15559990001"})
    who = r.json()["id"]
    token = first.api.post(f"/v1/admin/contacts/{who}/tokens", key, form={}).json()["token"]

    second = Instance(ctx, "l2", env)
    outcome = {}

    def refused():
        second.start(wait=False)
        deadline = time.monotonic() + 20
        ready = False
        while time.monotonic() < deadline:
            if second.proc.poll() is not None:
                break
            if wait_http(f"http://127.0.0.1:{second.port}/readyz", 0.5):
                ready = True
                break
        log = log_tail(second.log, 40)
        outcome["serving"] = ready and second.alive()
        if second.proc.poll() is not None:
            named = "CONFAB_STORAGE_URL" in log
            return named and second.proc.returncode != 0, (
                f"the second instance exited with {second.proc.returncode}"
                + (", naming CONFAB_STORAGE_URL" if named else f" without naming CONFAB_STORAGE_URL: {log.strip()[-300:]}"))
        return False, "a second instance with a local folder of its own started and serves on the same database"

    rep.run("local-files-second-refused", refused)

    if outcome.get("serving"):
        # What a user meets today: the upload is listed everywhere, its bytes
        # only where they were written.
        data = os.urandom(10_000)
        up = _upload(first.api, token, data)
        att = up.json()["id"] if up.status == 201 else None
        meta = second.api.get(f"/v1/attachments/{att}", token)
        content = second.api.get(f"/v1/attachments/{att}/content", token)
        rep.info("local-files-today",
                 f"uploaded through l1 ({up.status}); through l2 the attachment is {meta.status} "
                 f"but its content is {content.status} (the bytes are in l1's folder only)")
        second.stop()

    def shared():
        third = Instance(ctx, "l3", ctx.env(db, CONFAB_STORAGE_SHARED="true",
                                            CONFAB_STORAGE_URL="file://" + os.path.join(first.cwd, "confab-files")))
        third.start()
        data = os.urandom(20_000)
        up = _upload(first.api, token, data)
        if up.status != 201:
            return False, f"upload through l1: {up}"
        content = third.api.get(f"/v1/attachments/{up.json()['id']}/content", token)
        same = content.status == 200 and hashlib.sha256(content.body).digest() == hashlib.sha256(data).digest()
        third.stop()
        return same, ("with CONFAB_STORAGE_SHARED=true and l1's folder, a second instance starts "
                      f"and serves l1's upload ({content.status})")

    rep.run("local-files-shared-allowed", shared)
    first.stop()
