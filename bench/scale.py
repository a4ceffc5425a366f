"""Beyond one machine, measured on this one: the same night into a local root and into a root on S3,
and stage 1 on 1 vs 2 Ray workers; then what 100 M spans a night would need.

    .venv/bin/python bench/scale.py --rollouts 10000 --rounds 3      # 60k spans a night
    .venv/bin/python bench/scale.py --dir /tmp/scale --resume         # continue a stopped run

Each round, each in its own fresh process (bench/ingest.py's runner: wall seconds, the driver's peak
RSS; CPU seconds from the machine's busy counter, since Ray's workers are not the run's children), over
one generated night (bench/nightly.py's generator):

  * local:     ``spanrl ingest --settle 0s`` into a fresh local root
  * s3:        the same into a fresh ``s3://`` root on moto's S3 server on loopback (a Python server:
               an upper bound on the store's cost, not a real store's speed), from an empty mirror
  * workers-1: ``spanrl ingest`` into a fresh local root, one process (= local, measured again next to it)
  * workers-2: the same with ``--workers 2`` (a local Ray cluster started and stopped by the run;
               stage 1 and the first night's stage 2 on the workers)

Prints medians and the ratios local/s3 and workers-1/workers-2, in wall and CPU seconds, and the
projection for 100 M spans a night. Rows are appended to ``DIR/scale.jsonl`` as each run ends, so a
stopped run resumes (``--resume``). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

KINDS = ("local", "s3", "workers-1", "workers-2")


def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=10_000, help="rollouts in the night (6 spans each)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--window-h", type=float, default=8.0, help="the nightly window for the projection")
    args = p.parse_args()
    bench_ingest, nightly = _load("bench_ingest", "ingest.py"), _load("bench_nightly", "nightly.py")
    from tests.helpers.s3 import new_bucket, s3_server

    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    log = root / "scale.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if args.resume and log.is_file() else []
    night = root / "night"
    files = sorted(night.glob("*.jsonl")) or nightly.write_night(night, 0, args.rollouts)
    spans = args.rollouts * nightly.SPANS_PER_ROLLOUT
    print(f"one night: {spans:,} spans, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB; {args.rounds} rounds",
          flush=True)
    with s3_server() as env:
        for r in range(args.rounds):
            for kind in KINDS:
                if any(d["round"] == r + 1 and d["kind"] == kind for d in done):
                    continue
                data = root / "data"
                shutil.rmtree(data, ignore_errors=True)
                cache = root / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                target = f"s3://{new_bucket(env)}/night" if kind == "s3" else str(data)
                extra = ["--workers", "2"] if kind == "workers-2" else []
                os.environ.update({**env, "SPANRL_CACHE": str(cache), "RAY_ADDRESS": ""})
                busy0 = _busy_s()
                res = bench_ingest.measure([sys.executable, "-m", "spanrl", "ingest", "--data", target, "--input",
                                            str(night), "--settle", "0s", *extra])
                row = {"round": r + 1, "kind": kind, "spans": spans, "id": uuid.uuid4().hex[:8],
                       "machine_cpu_s": _busy_s() - busy0, **{k: v for k, v in res.items() if k != "err"}}
                done.append(row)
                with open(log, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(f"round {r + 1} {kind:<10} {row['seconds']:6.2f} s wall {row['machine_cpu_s']:6.2f} s CPU "
                      f"{row['rss_mb']:6.0f} MB", flush=True)
    report(done, spans, args.window_h)
    print(f"\nresults: {log}")


def _busy_s() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``): Ray's workers are not children
    the run waits for, so only the machine's counter sees their CPU. Includes other processes: run
    this on an otherwise quiet machine."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def report(rows: list[dict], spans: int, window_h: float) -> None:
    for r in rows:
        r.setdefault("machine_cpu_s", r["cpu_s"])
    med = {k: {m: statistics.median(r[m] for r in rows if r["kind"] == k)
               for m in ("seconds", "machine_cpu_s", "rss_mb")}
           for k in KINDS if any(r["kind"] == k for r in rows)}
    print(f"\n{'run':<12}{'wall s':>8}{'CPU s':>8}{'RSS MB':>8}   (CPU: the machine's busy seconds; RSS: the driver's)")
    for k, m in med.items():
        print(f"{k:<12}{m['seconds']:>8.2f}{m['machine_cpu_s']:>8.2f}{m['rss_mb']:>8.0f}")
    if "s3" in med:
        print(f"local / s3: {med['local']['seconds'] / med['s3']['seconds']:.2f} wall, "
              f"{med['local']['machine_cpu_s'] / med['s3']['machine_cpu_s']:.2f} CPU")
    if "workers-2" in med:
        print(f"workers 1 / workers 2: {med['workers-1']['seconds'] / med['workers-2']['seconds']:.2f} wall, "
              f"{med['workers-1']['machine_cpu_s'] / med['workers-2']['machine_cpu_s']:.2f} CPU")
    rate = spans / med["local"]["seconds"]  # spans per second, one process, the whole chain
    window = window_h * 3600
    need = 100e6 / (rate * window)
    print(f"one process: {rate:,.0f} spans/s for the whole chain -> 100 M spans in {100e6 / rate / 3600:.1f} h; "
          f"an {window_h:.0f} h window needs {need:.1f}x this machine. Workers take stage 1 and full stage-2 "
          "builds; an incremental night's stage 2 runs on the driver.")


if __name__ == "__main__":
    main()
