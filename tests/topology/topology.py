#!/usr/bin/env python3
"""The topology checks: confab past one machine, for real (Python 3,
standard library only). Started by tests/topology/run.sh, which provides
the private PostgreSQL (primary and streaming replica), S3 (moto) and the
environment:

    topology.py [--expect-missing] BIN GROUP...     GROUP: cluster limits local nats replica
    topology.py measure BIN                          the measurement table (measure.sh)

One line per check: PASS, FAIL, EXPECTED-FAIL (listed below and failing),
UNEXPECTED-PASS (listed below and passing: remove it from the list; with
--expect-missing that fails the run), plus INFO and FIGURE lines. Exits 1
on any FAIL.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Context, Report, die

# What the server does not do yet: each check here fails today, and names
# what it needs from the server. When a feature lands, its checks pass
# (UNEXPECTED-PASS) and leave this list.
EXPECTED_TO_FAIL = {
    # Presence: a contact with an open stream on any instance is online.
    "cluster-presence": "EXPECTED-TO-FAIL-UNTIL-presence",
    # One budget per contact across instances (today each process counts its own).
    "limits-rate-across-instances": "EXPECTED-TO-FAIL-UNTIL-shared-rate-limits",
    # CONFAB_MAX_STREAMS_PER_CONTACT across instances (today per process).
    "limits-streams-across-instances": "EXPECTED-TO-FAIL-UNTIL-shared-stream-limits",
    # Instance heartbeats: a second instance with unshared local files is refused.
    "local-files-second-refused": "EXPECTED-TO-FAIL-UNTIL-instance-heartbeats",
    # CONFAB_EVENT_BUS=nats://...: instances wake each other through NATS.
    "nats-instances-connect": "EXPECTED-TO-FAIL-UNTIL-nats-event-bus",
    "nats-events-flow": "EXPECTED-TO-FAIL-UNTIL-nats-event-bus",
    "nats-down-no-loss": "EXPECTED-TO-FAIL-UNTIL-nats-event-bus",
    "nats-down-readyz": "EXPECTED-TO-FAIL-UNTIL-nats-event-bus",
    "nats-recovers": "EXPECTED-TO-FAIL-UNTIL-nats-event-bus",
    # CONFAB_REPLICA_DATABASE_URLS, Confab-Read-After, CONFAB_REPLICA_MAX_LAG_MS, the lag metric.
    "replica-reads": "EXPECTED-TO-FAIL-UNTIL-read-replicas",
    "replica-read-your-writes": "EXPECTED-TO-FAIL-UNTIL-read-replicas",
    "replica-stopped": "EXPECTED-TO-FAIL-UNTIL-read-replicas",
    "replica-lagging-skipped": "EXPECTED-TO-FAIL-UNTIL-read-replicas",
    "replica-lag-metric": "EXPECTED-TO-FAIL-UNTIL-read-replicas",
}

GROUPS = ("cluster", "limits", "local", "nats", "replica")


def main(argv):
    strict = "--expect-missing" in argv
    args = [a for a in argv if a != "--expect-missing"]
    if args and args[0] == "measure":
        import measure
        if len(args) != 2:
            die("usage: topology.py measure BIN")
        work = os.environ.get("TOPO_WORK") or die("TOPO_WORK is not set (run measure.sh)")
        ctx = Context(os.path.abspath(args[1]), work, Report({}))
        try:
            measure.run(ctx)
        finally:
            ctx.procs.stop_all()
        return 0
    if len(args) < 2 or any(g not in GROUPS for g in args[1:]):
        die(f"usage: topology.py [--expect-missing] BIN GROUP...  (GROUP: {' '.join(GROUPS)})")
    work = os.environ.get("TOPO_WORK") or die("TOPO_WORK is not set (run run.sh)")
    report = Report(EXPECTED_TO_FAIL, strict=strict)
    ctx = Context(os.path.abspath(args[0]), work, report)
    for group in args[1:]:
        module = __import__({"local": "localfiles"}.get(group, group))
        try:
            module.run(ctx)
        except Exception as e:  # a group that cannot even start fails as a whole
            report.result(f"{group}-setup", False, f"raised {type(e).__name__}: {e}")
        finally:
            ctx.procs.stop_all()
    report.summary()
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
