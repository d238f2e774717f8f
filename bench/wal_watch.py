#!/usr/bin/env python3
"""How SQLite's WAL fills and starts over under load: samples the WAL size
(mxFrame, in pages) and how much of it is in the database file (nBackfill)
from the WAL index (the `-shm` file, read-only, every 10 ms), then prints
each time the WAL started over and how far the checkpoints ran behind.

Usage: bench/wal_watch.py DB-shm SECONDS (run it while a load runs, e.g.
bench/tail_split.sh sqlite ... send). Reads the header SQLite documents
(fileformat2, "WAL-Index Format"): mxFrame at byte 16 and nBackfill at 96,
in the machine's byte order."""
import struct
import sys
import time

path, seconds = sys.argv[1], float(sys.argv[2])
samples = []
start = time.time()
while time.time() - start < seconds:
    with open(path, "rb") as f:
        head = f.read(100)
    frames, = struct.unpack_from("=I", head, 16)
    backfilled, = struct.unpack_from("=I", head, 96)
    samples.append((time.time() - start, frames, backfilled))
    time.sleep(0.01)
restarts = [(t, before[1], frames) for before, (t, frames, _) in zip(samples, samples[1:])
            if frames < before[1]]
behind = sorted(frames - backfilled for _, frames, backfilled in samples)
print(f"{len(samples)} samples over {seconds:g} s; largest WAL {max(s[1] for s in samples)} pages")
print(f"started over {len(restarts)} times: " + ", ".join(
    f"at {t:.2f} s from {a} pages" for t, a, _ in restarts))
print(f"pages not yet in the file: p50 {behind[len(behind) // 2]}, "
      f"p90 {behind[len(behind) * 9 // 10]}, max {behind[-1]}")
