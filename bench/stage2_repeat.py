"""Stage 2's statements, each as the median of several rebuilds of one lake: small changes, measured.

    .venv/bin/python bench/stage2_repeat.py --rollouts 10000 --repeat 5    # a 60k-span lake
    .venv/bin/python bench/stage2_repeat.py --rollouts 100000 --repeat 3   # 600k spans

bench/night_profile.py times one night once, which moves by ±5 % between runs: too coarse to tell a
change of one statement from noise. This ingests one night of bench/nightly.py's traffic once (kept in
--dir, so a second run reuses it), then runs ``spanrl transitions build --rebuild`` on that lake
--repeat times in this process and prints, per statement (its first words), the median CPU seconds
over the rebuilds, and the median wall and CPU seconds of a whole rebuild. With --incremental the lake
holds two nights, the second ingested without stage 2, and each repeat restores the first night's
build and runs the incremental build of the second (what every night after the first runs). Run it
before and after a change (``git stash``) on a quiet machine: the medians of two runs agree within
≈ 3 %. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
_spec = importlib.util.spec_from_file_location("bench_night_profile", HERE / "night_profile.py")
night_profile = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(night_profile)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=10_000, help="rollouts in the lake (6 spans each)")
    p.add_argument("--repeat", type=int, default=5, help="rebuilds measured")
    p.add_argument("--top", type=int, default=25, help="statements listed")
    p.add_argument("--incremental", action="store_true", help="time the second night's incremental build")
    p.add_argument("--memory-limit", default=None,
                   help="the builds' --memory-limit (default: spanrl's, 2GB); near it DuckDB spills and purges "
                        "its allocator, which shows as system time and page faults")
    p.add_argument("--dir", type=Path, default=None,
                   help="work folder, reused when it holds the lake already (default: bench-stage2-{rebuild|"
                        "incremental}-ROLLOUTS under the system temp folder)")
    args = p.parse_args()
    kind = "incremental" if args.incremental else "rebuild"
    root = args.dir or Path(tempfile.gettempdir()) / f"bench-stage2-{kind}-{args.rollouts}"
    data, first_build = root / "data", root / "first-night-transitions"
    ingest = [sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s"]
    if not (data / "lake" / "spans").is_dir():
        night_profile.nightly.write_night(data / "otel", 0, args.rollouts)
        subprocess.run(ingest, check=True, capture_output=True)
        if args.incremental:
            shutil.copytree(data / "transitions", first_build, symlinks=True)
            night_profile.nightly.write_night(data / "otel", 1, args.rollouts)
            subprocess.run([*ingest, "--no-transitions"], check=True, capture_output=True)
    build = ["transitions", "build", "--data", str(data), "--settle", "0s", *([] if args.incremental else ["--rebuild"]),
             *(["--memory-limit", args.memory_limit] if args.memory_limit else [])]
    from spanrl.cli import cli

    connect = duckdb.connect
    per_statement: dict[str, list[float]] = {}
    runs: list[tuple[float, float, float, int]] = []
    for _ in range(args.repeat):
        log: list = []
        if args.incremental:  # back to the first night's build: the second night is new again
            shutil.rmtree(data / "transitions")
            shutil.copytree(first_build, data / "transitions", symlinks=True)
        duckdb.connect = lambda *a, _log=log, **kw: night_profile._Timed(connect(*a, **kw), _log)
        t0, c0, u0 = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        try:
            cli(build, standalone_mode=False)
        finally:
            duckdb.connect = connect
        u1 = resource.getrusage(resource.RUSAGE_SELF)
        runs.append((time.perf_counter() - t0, time.process_time() - c0, u1.ru_stime - u0.ru_stime,
                     u1.ru_minflt - u0.ru_minflt))
        this_run: dict[str, float] = {}
        for _, _, query, cpu, _ in log:
            key = query[:90]
            if key.startswith("COPY (SELECT * REPLACE ('"):  # the snapshot id differs per run
                key = "COPY (SELECT * REPLACE (snapshot_id) ..."
            this_run[key] = this_run.get(key, 0.0) + cpu
        for key, cpu in this_run.items():
            per_statement.setdefault(key, []).append(cpu)
    print(f"\n{args.rollouts * night_profile.nightly.SPANS_PER_ROLLOUT:,} spans, {args.repeat} {kind} builds: "
          f"median {statistics.median(r[0] for r in runs):.3f} s wall / {statistics.median(r[1] for r in runs):.3f} "
          f"s CPU (each: {', '.join(f'{r[1]:.2f}' for r in runs)} CPU s); of it system time "
          f"{statistics.median(r[2] for r in runs):.2f} s, {statistics.median(r[3] for r in runs):,.0f} minor page faults; "
          f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    print(f"\n  {'CPU s':>7}  statement (median over the builds)")
    for med, key in sorted(((statistics.median(v), k) for k, v in per_statement.items()), reverse=True)[:args.top]:
        print(f"  {med:7.3f}  {key}")


if __name__ == "__main__":
    main()
