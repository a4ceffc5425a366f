"""Beyond one machine, measured on this one: where ``--workers 2`` starts to pay, against a Ray cluster
started once and against a local Ray started per run, and what N machines would give.

    .venv/bin/python bench/scale.py --dir /tmp/scale                    # 600, 60k, 600k, 2M spans a night
    .venv/bin/python bench/scale.py --dir /tmp/scale --resume           # continue a stopped run
    .venv/bin/python bench/scale.py --dir /tmp/scale --report-only      # print the tables again

For each size, ``--nights`` generated nights (bench/nightly.py's generator: 6 spans a rollout, rollout ids
unique across nights) go into a fresh data root, night by night: night 1 is a full build, night 2 an
incremental one (the nightly case). Each command is its own fresh process; the kinds, interleaved round by
round:

  * local:    ``spanrl ingest --settle 0s`` into a fresh local root, one process. ``--workers 1`` is this
              run by contract (a pool of one runs in the process), against a cluster or not.
  * ray-run:  the same with ``--workers 2`` and no ``RAY_ADDRESS``: a local Ray started and stopped by
              each command (the start-up every run pays).
  * s3:       (``--s3``) one process into a fresh ``s3://`` root on moto's S3 server on loopback; then
              ``spanrl sql`` over its last night from an empty cache prints the bytes it fetched.
  * cluster:  ``--workers 2`` with ``RAY_ADDRESS`` naming a cluster this script starts once per size
              (``ray start --head --num-cpus 2``) and stops after that size's cluster rounds, so that
              its idle daemons do not load the other kinds' runs.

Wall seconds per command; CPU from the machine's busy counter (``/proc/stat``: Ray's workers are not the
command's children); the driver's peak RSS; from each command's manifest, stage 2's mode, seconds and
shards; from its summary, stage 1's seconds. Rows go to ``DIR/scale.jsonl`` as each command ends, so a
stopped run resumes. The report fits wall = fixed + per-span x spans per kind and night, prints the
ratios, the crossover and a projection to N machines (docs/scale.md says what is measured and what is
projected). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RUNNER = r"""
import resource, subprocess, sys, time, json
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": r.returncode, "seconds": dt, "rss_mb": ru.ru_maxrss / 1024, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "out": r.stdout[-6000:], "err": r.stderr[-8000:]}))
"""



def _load(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _spans(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * mult)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spans", default="600,60k,600k,2M", help="night sizes in spans, comma-separated")
    p.add_argument("--rounds", default="3,3,3,2", help="rounds per size (one number for all sizes)")
    p.add_argument("--nights", type=int, default=2, help="nights per run: 1 = a full build only")
    p.add_argument("--kinds", default="local,ray-run,cluster", help="which runs (local, ray-run, cluster, s3)")
    p.add_argument("--s3", action="store_true", help="also measure one process into an S3 root on moto")
    p.add_argument("--memory-limit", default=None, help="passed to every command (default: spanrl's own)")
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--window-h", type=float, default=8.0, help="the nightly window for the projection")
    args = p.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    log = root / "scale.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() and (
        args.resume or args.report_only) else []
    if not args.report_only:
        sizes = [_spans(s) for s in args.spans.split(",")]
        rounds = [int(r) for r in args.rounds.split(",")]
        rounds = rounds * len(sizes) if len(rounds) == 1 else rounds
        for spans, n in zip(sizes, rounds, strict=True):
            kinds = [k for k in args.kinds.split(",") if k] + (["s3"] if args.s3 else [])
            run_size(root, log, done, spans, n, args.nights, kinds, args.memory_limit)
    report(done, args.window_h)
    print(f"\nresults: {log}")


def run_size(root: Path, log: Path, done: list[dict], spans: int, rounds: int, nights: int,
             kinds: list[str], memory_limit: str | None) -> None:
    nightly = _load("bench_nightly", "nightly.py")
    rollouts = max(spans // nightly.SPANS_PER_ROLLOUT, 1)
    spans = rollouts * nightly.SPANS_PER_ROLLOUT
    todo = lambda kind, r: not any(d["spans"] == spans and d["round"] == r and d["kind"] == kind  # noqa: E731
                                   for d in done)
    cluster = "cluster" in kinds
    kinds = [k for k in kinds if k != "cluster"]
    s3 = "s3" in kinds
    if not any(todo(k, r) for r in range(1, rounds + 1) for k in [*kinds, *(["cluster"] if cluster else [])]):
        return
    gen = root / f"nights-{spans}"
    for night in range(nights):
        if not sorted((gen / str(night)).glob("*.jsonl")):
            shutil.rmtree(gen / str(night), ignore_errors=True)
            nightly.write_night(gen / str(night), night, rollouts)
    mb = sum(f.stat().st_size for n in range(nights) for f in (gen / str(n)).glob("*.jsonl")) / 1e6 / nights
    print(f"\n{spans:,} spans a night ({mb:.0f} MB), {nights} night(s), {rounds} round(s)", flush=True)
    s3_env = _s3() if s3 else None
    env = {**(s3_env.__enter__() if s3_env else {}), "RAY_ADDRESS": ""}
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})  # boto3 here: new_bucket
    try:
        for r in range(1, rounds + 1):
            for kind in kinds:
                if todo(kind, r):
                    _run(root, log, done, gen, spans, nights, r, kind, env, memory_limit)
        if cluster and any(todo("cluster", r) for r in range(1, rounds + 1)):
            with ray_cluster() as start_s:  # RAY_ADDRESS=auto finds it (its own IP, not 127.0.0.1, on this VM)
                for r in range(1, rounds + 1):
                    if todo("cluster", r):
                        _run(root, log, done, gen, spans, nights, r, "cluster",
                             {**env, "RAY_ADDRESS": "auto"}, memory_limit, cluster_start_s=start_s)
    finally:
        if s3_env:
            s3_env.__exit__(None, None, None)


def _s3():
    from tests.helpers.s3 import s3_server

    return s3_server()


class ray_cluster:  # noqa: N801 (a context manager, used as a function)
    """``ray start --head`` once, on a free port with its own temp folder; ``ray stop`` at the end."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # Ray's socket paths must stay short
        self.ray = str(Path(sys.executable).parent / "ray")

    def __enter__(self) -> float:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        t = time.perf_counter()
        subprocess.run([self.ray, "start", "--head", "--num-cpus", "2", "--port", str(port), "--node-ip-address",
                        "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats",
                        "--temp-dir", str(self.tmp)], check=True, capture_output=True)
        start_s = time.perf_counter() - t
        print(f"  a Ray cluster started once ({start_s:.1f} s): 127.0.0.1:{port}", flush=True)
        return start_s

    def __exit__(self, *exc: object) -> None:
        subprocess.run([self.ray, "stop", "--force"], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _run(root: Path, log: Path, done: list[dict], gen: Path, spans: int, nights: int, r: int, kind: str,
         env: dict[str, str], memory_limit: str | None, cluster_start_s: float | None = None) -> None:
    from tests.helpers.s3 import new_bucket

    data, cache = root / "data", root / "cache"
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    target = f"s3://{new_bucket(env)}/night" if kind == "s3" else str(data)
    extra = ["--workers", "2"] if kind in ("ray-run", "cluster") else []
    extra += ["--memory-limit", memory_limit] if memory_limit else []
    row = {"spans": spans, "round": r, "kind": kind, "id": uuid.uuid4().hex[:8], "nights": [],
           "memory_limit": memory_limit or "default",
           **({"cluster_start_s": cluster_start_s} if cluster_start_s is not None else {})}
    for night in range(nights):
        busy0 = _busy_s()
        out = subprocess.run([sys.executable, "-c", RUNNER, sys.executable, "-m", "spanrl", "ingest", "--data",
                              target, "--input", str(gen / str(night)), "--settle", "0s", *extra],
                             capture_output=True, text=True, check=True,
                             env={**os.environ, **env, "SPANRL_CACHE": str(cache), "COLUMNS": "200"})
        res = json.loads(out.stdout.strip().splitlines()[-1])
        if res["rc"] != 0:  # recorded (e.g. out of memory at this size), and the run's later nights skipped
            error = next((line for line in res["err"].splitlines() if line.startswith("Error:")), res["err"][-300:])
            row["nights"].append({"night": night + 1, "rc": res["rc"], "seconds": res["seconds"], "error": error})
            print(f"  round {r} {kind:<8} night {night + 1} failed after {res['seconds']:.1f} s: {error[:200]}")
            break
        stage2 = {} if kind == "s3" else _stage2(data)
        row["nights"].append({"night": night + 1, "seconds": res["seconds"], "machine_cpu_s": _busy_s() - busy0,
                              "cpu_s": res["cpu_s"], "rss_mb": res["rss_mb"],
                              "stage1_s": _stage1_s(res["err"] + res["out"]), "stage2": stage2})
    if kind == "s3" and not any(n.get("rc") for n in row["nights"]):
        row["sql_fetched"] = _sql_fetched(target, nights, {**os.environ, **env, "SPANRL_CACHE": str(root / "cache-sql")})
        print(f"  round {r} s3 sql over the last night, from an empty cache: {row['sql_fetched']}", flush=True)
    shutil.rmtree(data, ignore_errors=True)
    done.append(row)
    with open(log, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(f"  round {r} {kind:<8} " + "  ".join(f"night {n['night']}: failed" if n.get("rc") else
        f"night {n['night']}: {n['seconds']:6.2f} s wall {n['machine_cpu_s']:6.2f} s CPU {n['rss_mb']:5.0f} MB"
        f" ({n['stage2'].get('mode', '?')}{_shards(n)})" for n in row["nights"]), flush=True)


def _sql_fetched(target: str, nights: int, env: dict[str, str]) -> str:
    """``spanrl sql`` on the S3 root over its last night, as a fresh machine runs it (an empty cache):
    the line where it prints the bytes it fetched against the root's (spanrl/inplace.py)."""
    shutil.rmtree(env["SPANRL_CACHE"], ignore_errors=True)
    query = f"select name, count(*) AS n from spans where date = '2026-01-{nights:02d}' group by 1 order by 1"
    res = subprocess.run([sys.executable, "-m", "spanrl", "sql", "--data", target, query], capture_output=True,
                         text=True, env=env)
    return next((line for line in res.stderr.splitlines() if line.startswith("spanrl: fetched")),
                f"(exit {res.returncode}: {res.stderr.strip()[-200:]})")


def _stage1_s(out: str) -> float | None:
    """Stage 1's seconds: the 7th cell of the trace-lake table's row (files, MB, spans, log records,
    duplicates, rejects, seconds, spans/s)."""
    for line in out.splitlines():
        cells = [c.strip().replace(",", "") for c in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[0].isdigit():
            return float(cells[6])
    return None


def _stage2(data: Path) -> dict:
    from spanrl.transitions.snapshot import latest_manifest

    s = (latest_manifest(data) or {}).get("stats", {}).get("stage2", {})
    return {k: s.get(k) for k in ("mode", "reason", "seconds", "segments", "traces_recomputed", "why")}


def _shards(n: dict) -> str:
    segs = n["stage2"].get("segments") or {}
    return f", {segs['shards']} shards" if segs.get("shards") else ""


def _busy_s() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``): Ray's workers are not children
    the run waits for, so only the machine's counter sees their CPU. Includes other processes: run
    this on an otherwise quiet machine."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _median(rows: list[dict], spans: int, kind: str, night: int, key: str) -> float | None:
    vals = [r["nights"][night][key] for r in rows if r["spans"] == spans and r["kind"] == kind
            and len(r["nights"]) > night and not r["nights"][night].get("rc")
            and r["nights"][night].get(key) is not None]
    return statistics.median(vals) if vals else None


def _line(rows: list[dict], sizes: list[int], kind: str, night: int) -> tuple[float, float] | None:
    """wall = fixed + per_span * spans: per_span from the two largest sizes' medians (where the work
    dominates), fixed from the smallest size (where Ray's start-up dominates)."""
    w = {s: v for s in sizes if (v := _median(rows, s, kind, night, "seconds")) is not None}
    if len(w) < 3:
        return None
    small, (s1, s2) = min(w), sorted(w)[-2:]
    per_span = (w[s2] - w[s1]) / (s2 - s1)
    return w[small] - per_span * small, per_span


def _crossing(rows: list[dict], sizes: list[int], kind: str, night: int) -> str:
    """Where one process / ``kind`` first reaches 1.0 among the measured sizes (interpolated on
    log(spans)), else where the fitted lines cross, else why they do not."""
    import math

    ratio = [(s, b / w) for s in sizes if (b := _median(rows, s, "local", night, "seconds"))
             and (w := _median(rows, s, kind, night, "seconds"))]
    for (s1, r1), (s2, r2) in zip(ratio, ratio[1:], strict=False):
        if r1 < 1.0 <= r2:
            x = math.log(s1) + (1.0 - r1) / (r2 - r1) * (math.log(s2) - math.log(s1))
            return f"measured: --workers 2 pays from ~{math.exp(x):,.0f} spans a night (ratio {r1:.2f} -> {r2:.2f})"
    if ratio and ratio[0][1] >= 1.0:
        return "measured: --workers 2 is never slower here"
    one, other = _line(rows, sizes, "local", night), _line(rows, sizes, kind, night)
    if not (one and other):
        return "not enough sizes for a crossover"
    (a1, b1), (a2, b2) = one, other
    largest = f"no crossover up to {ratio[-1][0]:,} spans (ratio {ratio[-1][1]:.2f}); " if ratio else ""
    if b2 < b1:
        return f"{largest}projected: the lines cross at ~{(a2 - a1) / (b1 - b2):,.0f} spans a night"
    return f"{largest}projected: never on this machine (per span, --workers 2 costs {b2 / b1:.2f}x one process)"


def report(rows: list[dict], window_h: float) -> None:
    if not rows:
        print("no rows yet")
        return
    sizes = sorted({r["spans"] for r in rows})
    kinds = [k for k in ("local", "ray-run", "cluster", "s3") if any(r["kind"] == k for r in rows)]
    nights = max(len(r["nights"]) for r in rows)
    for r in rows:
        for n in r["nights"]:
            if n.get("rc"):
                print(f"{r['kind']} at {r['spans']:,} spans, night {n['night']}, round {r['round']} (memory limit "
                      f"{r.get('memory_limit', 'default')}): failed after {n['seconds']:.0f} s: {n['error'][:160]}")
    for night in range(nights):
        label = "night 1 (full build)" if night == 0 else f"night {night + 1} (incremental)"
        print(f"\n{label}: medians; wall s / machine CPU s / driver RSS MB; ratio = one process / this kind")
        print(f"{'spans':>10}" + "".join(f"{k:>30}" for k in kinds))
        for spans in sizes:
            cells = []
            base = _median(rows, spans, "local", night, "seconds")
            for k in kinds:
                w, c, m = (_median(rows, spans, k, night, key) for key in ("seconds", "machine_cpu_s", "rss_mb"))
                if w is None:
                    cells.append(f"{'-':>30}")
                    continue
                ratio = f" ({base / w:.2f}x)" if base and k != "local" else ""
                cells.append(f"{f'{w:.2f} / {c:.2f} / {m:.0f}{ratio}':>30}")
            print(f"{spans:>10,}" + "".join(cells))
        for k in kinds:
            if line := _line(rows, sizes, k, night):
                print(f"  {k:<8} wall = {line[0]:6.2f} s fixed + {line[1] * 1e6:7.2f} s per million spans")
        for k in ("ray-run", "cluster"):
            if k in kinds:
                print(f"  {k}: {_crossing(rows, sizes, k, night)}")
    for r in rows:
        if r.get("sql_fetched"):
            print(f"s3 root, {r['spans']:,} spans a night x {len(r['nights'])}, round {r['round']}: {r['sql_fetched']}")
    _projection(rows, sizes, window_h)


def _projection(rows: list[dict], sizes: list[int], window_h: float) -> None:
    """N nodes like this one (2 cores, two one-CPU tasks each), from the largest size's cluster runs:
    the driver's CPU (its own process tree) stays on one node and is counted as wall time (a bound: its
    DuckDB uses two threads at times), the workers' CPU (the machine's busy seconds minus the driver's)
    splits over the nodes' cores, plus the cluster's fixed cost per command (at the smallest size)."""
    big, small = sizes[-1], sizes[0]
    one = _median(rows, big, "local", 0, "seconds")
    machine, driver = (_median(rows, big, "cluster", 0, k) for k in ("machine_cpu_s", "cpu_s"))
    fixed = [(w - b) for k in ("cluster",) if (w := _median(rows, small, k, 0, "seconds")) is not None
             and (b := _median(rows, small, "local", 0, "seconds")) is not None]
    if not (one and machine and driver):
        return
    if small == big:
        print("\n(no projection: it needs the fixed cost from a smaller size in the same run)")
        return
    over, workers = (fixed[0] if fixed else 0.0), max(machine - driver, 0.0)
    print(f"\nprojection to N nodes from {big:,} spans (night 1): one process {one:.1f} s; on the cluster, the driver "
          f"{driver:.1f} CPU s, the workers {workers:.1f} CPU s, fixed {over:.1f} s a command (at {small:,} spans)")
    for n in (1, 2, 4, 8, 16):
        t = over + driver + workers / (2 * n)
        hours = 100e6 / big * t / 3600
        print(f"  {n:>2} node(s): ~{t:6.1f} s for {big:,} spans ({one / t:4.2f}x one process) -> 100 M spans "
              f"in {hours:4.1f} h ({'inside' if hours <= window_h else 'outside'} a {window_h:.0f} h window)")
    print(f"  the driver's part bounds the speed-up at {one / (over + driver):.1f}x one process")


if __name__ == "__main__":
    main()
