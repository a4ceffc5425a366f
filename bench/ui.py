"""Benchmark ``spanrl ui``: server time of the Rollouts page (every structured filter), of one rollout
page, of the Tasks and Training-cycles pages, the server's startup and its memory, on a generated
data root.

    nice -n 5 .venv/bin/python bench/ui.py --rollouts 1000000 --dir /tmp/ui-bench   # the issue's scale

Targets (issue 16, on 2 cores): Rollouts page with a structured filter < 1 s, one rollout < 0.5 s,
server memory < 1 GB. The data root is what a nightly ingest leaves, written straight by DuckDB
(``bench/ui_lake.py``: the lake as ingest lays it out, 6-7 spans per rollout; the stage-2 tables,
published with ``write_tables``; a snapshot over every rollout; five cycles); ``--dir`` keeps it and a
second run reuses it (delete it after a change of the storage format). The server runs as the real
command in its own process; times are its ``Server-Timing`` header (server time, not the network),
the median of ``--repeat`` requests after one warm-up request each (the first request's time is
shown too). Memory: the process's peak resident memory (VmHWM). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_lake import T0_NS, write_data_root  # noqa: E402

ROLLOUTS_TARGET_S, ROLLOUT_TARGET_S, RSS_TARGET_MB = 1.0, 0.5, 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of a process, MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    kb = {k: int(v.split()[0]) for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(.+)$", status, re.MULTILINE)}
    return kb.get("VmRSS", 0) / 1024, kb.get("VmHWM", 0) / 1024


def _size_mb(data: Path) -> dict[str, float]:
    """On-disk MB of the lake and of the stage-2 tables."""
    def du(folder: Path) -> float:
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20

    return {"lake": du(data / "lake"), "tables": du(data / "transitions" / "_tables")}


def _server_ms(url: str) -> tuple[float, int]:
    with urllib.request.urlopen(url, timeout=3600) as resp:
        resp.read()
        timing = resp.headers.get("Server-Timing", "app;dur=nan")
        return float(timing.split("dur=")[1]), resp.status


def measure(base: str, path: str, repeat: int) -> dict:
    first, _ = _server_ms(base + path)  # first request: Parquet metadata read, filter choices cached
    times = []
    for _ in range(repeat):
        ms, status = _server_ms(base + path)
        if status != 200:
            raise SystemExit(f"{path}: HTTP {status}")
        times.append(ms)
    return {"path": path, "first_ms": first, "median_ms": statistics.median(times), "max_ms": max(times)}


def pages(rollouts: int, snapshot_id: str) -> list[tuple[str, str, float]]:
    """(label, path, target seconds) of every measured page."""
    day = time.strftime("%Y-%m-%d", time.gmtime(T0_NS / 1e9))
    mid = rollouts // 2
    return [
        ("rollouts, no filter", "/rollouts", ROLLOUTS_TARGET_S),
        ("  task", "/rollouts?task=task-7", ROLLOUTS_TARGET_S),
        ("  agent", "/rollouts?agent=coder", ROLLOUTS_TARGET_S),
        ("  reward range", "/rollouts?reward_min=0.5&reward_max=0.75", ROLLOUTS_TARGET_S),
        ("  AIR hits", "/rollouts?air=yes", ROLLOUTS_TARGET_S),
        ("  time range", f"/rollouts?since={day}T00:10&until={day}T01:00", ROLLOUTS_TARGET_S),
        ("  snapshot", f"/rollouts?snapshot={snapshot_id}", ROLLOUTS_TARGET_S),
        ("  cycle", "/rollouts?cycle=3", ROLLOUTS_TARGET_S),
        ("  all + sort by reward, page 3", "/rollouts?task=task-7&agent=coder&reward_min=0.25&air=no&cycle=3"
                                           "&sort=reward&page=3", ROLLOUTS_TARGET_S),
        ("one rollout", f"/rollouts/r{mid}", ROLLOUT_TARGET_S),
        ("one rollout (AIR hit)", f"/rollouts/r{mid - mid % 7 + 3}", ROLLOUT_TARGET_S),
        ("one snapshot, page 1", f"/snapshots/{snapshot_id}", ROLLOUTS_TARGET_S),
        ("  middle page", f"/snapshots/{snapshot_id}?page={max(1, mid // 50)}", ROLLOUTS_TARGET_S),
        ("tasks", "/tasks", ROLLOUTS_TARGET_S),
        ("cycles", "/cycles", ROLLOUTS_TARGET_S),
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rollouts", type=int, default=20_000, help="rollouts in the lake (6-7 spans each)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", type=Path, default=None, help="keep the data root here (reused when it exists)")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    args = p.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-bench-ui-"))
    data = root / f"data-{args.rollouts}"
    t = time.perf_counter()
    spans, snapshot_id = write_data_root(data, args.rollouts)
    size = _size_mb(data)
    print(f"data root {data}: {args.rollouts:,} rollouts, {spans:,} spans, stage-2 tables, a snapshot and 5 "
          f"cycles; {size['lake']:.0f} MB lake, {size['tables']:.0f} MB tables ({time.perf_counter() - t:.0f} s, "
          "reused when already there)")
    load_before = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before the server starts")
    port = _free_port()
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "spanrl", "ui", "--data", str(data), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if "http://" not in line:
            raise SystemExit(f"spanrl ui did not start:\n{proc.stderr.read()[-3000:]}")
        startup = time.perf_counter() - t
        ready_rss = _rss_mb(proc.pid)
        base = f"http://127.0.0.1:{port}"
        print(f"server ready in {startup:.1f} s, RSS {ready_rss[0]:.0f} MB "
              f"(peak {ready_rss[1]:.0f} MB)\n")
        print(f"{'page':<34}{'first ms':>9}{'median ms':>10}{'max ms':>9}{'target':>9}  ok")
        rows = []
        for label, path, target in pages(args.rollouts, snapshot_id):
            r = measure(base, path, args.repeat)
            r.update(label=label.strip(), target_s=target, ok=r["median_ms"] <= target * 1000)
            rows.append(r)
            print(f"{label:<34}{r['first_ms']:>9.1f}{r['median_ms']:>10.1f}{r['max_ms']:>9.1f}{target:>8.1f}s  "
                  f"{'yes' if r['ok'] else 'NO'}")
        rss, peak = _rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"\nserver RSS now {rss:.0f} MB, peak {peak:.0f} MB (target < {RSS_TARGET_MB} MB): "
          f"{'ok' if peak < RSS_TARGET_MB else 'OVER'}")
    load_after = os.getloadavg()[0]
    print(f"startup: {startup:.1f} s for {args.rollouts:,} rollouts (the per-rollout summary computed from the "
          f"stage-2 tables, the newest snapshots marked); load average {load_after:.1f} at the end")
    if args.json:
        args.json.write_text(json.dumps({"rollouts": args.rollouts, "spans": spans, "size_mb": size,
                                         "startup_s": startup, "rss_mb": rss, "cores": os.cpu_count(),
                                         "load_average": [load_before, load_after],
                                         "peak_rss_mb": peak, "pages": rows}, indent=2))
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
