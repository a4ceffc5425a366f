"""Nightly ingest at scale: does each night cost what the night brought, or what the lake holds?

    .venv/bin/python bench/nightly.py --nights 8 --rollouts 10000     # ~70k spans per night
    .venv/bin/python bench/nightly.py --dir /tmp/nightly --resume     # continue a stopped run

N nights of equal generated agent traffic (an invoke_agent root, three chat calls with ~1 KB prompts,
a tool span and a reward span per rollout; the generator of bench/ingest.py) are ingested one after
another into ONE data root, as a scheduled `spanrl ingest` would. For every night, in separate
processes (so peak RSS is each run's own):
  * baseline: DuckDB's bare ``COPY (FROM read_ndjson(that night's files)) TO x.parquet``
  * spanrl:   ``spanrl ingest --settle 0s`` (the full chain: lake + snapshot) into the growing root
and prints seconds, peak RSS and the ratios baseline/spanrl (wall and CPU) of each night, last/first, and a 30-night
projection from the least-squares slope. Targets: last/first <= 1.2 over 8 nights and peak RSS flat
(issue 11); every night >= 0.35x the bare conversion in wall and in CPU time, peak RSS <= 1.5x its
(issue 28; issue 11 asked 0.5x). Results are appended to ``DIR/nightly.jsonl`` as each night ends,
so a stopped run resumes with ``--resume``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from spanrl.memory import resolve_memory_limit  # noqa: E402
from spanrl.transitions.snapshot import latest_manifest  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_ingest", HERE / "ingest.py")
bench_ingest = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(bench_ingest)

DAY_NS = 86_400 * 1_000_000_000
T0 = 1_767_225_600_000_000_000  # 2026-01-01


SPANS_PER_ROLLOUT = 6  # invoke_agent root, three chat calls, one tool span, one reward span


def write_night(otel: Path, night: int, rollouts: int) -> list[Path]:
    """One night's span files (collector-style rotated names), rollout ids unique across nights."""
    files, _ = bench_ingest.generate(otel, rollouts * SPANS_PER_ROLLOUT, first_rollout=night * rollouts,
                                     t0=T0 + night * DAY_NS, prefix=f"traces-2026-01-{night + 1:02d}")
    return files


def run_night(root: Path, night: int, rollouts: int, memory_limit: str) -> dict:
    data, tmp = root / "data", root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    files = write_night(data / "otel", night, rollouts)
    base = bench_ingest.measure([sys.executable, "-c", bench_ingest.BASELINE, str(tmp / f"bare-{night}.parquet"),
                                 memory_limit, str(tmp), *map(str, files)])
    full = bench_ingest.measure([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s",
                                 "--memory-limit", memory_limit])
    (tmp / f"bare-{night}.parquet").unlink(missing_ok=True)
    stage2 = (latest_manifest(data) or {}).get("stats", {}).get("stage2", {})
    return {"night": night + 1, "spans": rollouts * SPANS_PER_ROLLOUT, "mb": sum(p.stat().st_size for p in files) / 1e6,
            "baseline_s": base["seconds"], "baseline_rss_mb": base["rss_mb"],
            "spanrl_s": full["seconds"], "spanrl_rss_mb": full["rss_mb"], "ratio": base["seconds"] / full["seconds"],
            "baseline_cpu_s": base["cpu_s"], "spanrl_cpu_s": full["cpu_s"], "cpu_ratio": base["cpu_s"] / full["cpu_s"],
            "baseline_sys_s": base["sys_s"], "spanrl_sys_s": full["sys_s"], "baseline_minflt": base["minflt"],
            "spanrl_minflt": full["minflt"], "spanrl_majflt": full["majflt"],
            "stage2": stage2.get("mode"), "traces_recomputed": stage2.get("traces_recomputed"),
            "stage2_rows_s": (stage2.get("seconds") or {}).get("rows"),
            "snapshots_mb": _disk_mb(data / "transitions")}


def _disk_mb(folder: Path) -> float:
    """Disk used under ``folder``, a hard-linked file counted once (what ``du`` reports)."""
    seen, total = set(), 0
    for p in folder.rglob("*"):
        st = p.lstat()
        if p.is_file() and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total / 1e6


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def report(rows: list[dict]) -> None:
    print(f"\n{'night':>5}{'spans':>9}{'MB':>7}{'bare s':>8}{'spanrl s':>10}{'ratio':>7}{'CPU ratio':>10}{'RSS MB':>8}"
          f"{'RSS x bare':>11}{'transitions/ MB':>16}  stage 2 (rows: its compute and segment write)")
    for r in rows:
        cpu = f"{r['cpu_ratio']:>10.2f}" if "cpu_ratio" in r else f"{'':>10}"  # older results: wall only
        print(f"{r['night']:>5}{r['spans']:>9,}{r['mb']:>7.0f}{r['baseline_s']:>8.2f}{r['spanrl_s']:>10.2f}"
              f"{r['ratio']:>7.2f}{cpu}{r['spanrl_rss_mb']:>8.0f}{r['spanrl_rss_mb'] / r['baseline_rss_mb']:>11.2f}"
              f"{r.get('snapshots_mb', 0):>16.0f}"
              f"  {r.get('stage2')} ({r.get('traces_recomputed')} traces"
              + (f", rows {r['stage2_rows_s']:.2f} s)" if r.get("stage2_rows_s") is not None else ")"))
    if len(rows) < 2:
        return
    first, last = rows[0], rows[-1]
    k = slope([r["night"] for r in rows], [r["spanrl_s"] for r in rows])
    n30 = rows[0]["spanrl_s"] + k * 29
    cpu = [r["cpu_ratio"] for r in rows if "cpu_ratio" in r]  # older results hold wall times only
    print(f"\nlast/first {last['spanrl_s'] / first['spanrl_s']:.2f} (target <= 1.2); "
          f"min ratio {min(r['ratio'] for r in rows):.2f} wall" + (f", {min(cpu):.2f} CPU" if cpu else "")
          + " (target >= 0.35, issue 28); "
          f"peak RSS last/first {last['spanrl_rss_mb'] / first['spanrl_rss_mb']:.2f}")
    if all("spanrl_sys_s" in r for r in rows):  # results before 2026-12-07 lack them
        print("system s (of CPU) and minor page faults, bare / spanrl: " + "; ".join(
            f"night {r['night']} {r['baseline_sys_s']:.2f} ({r['baseline_sys_s'] / r['baseline_cpu_s']:.0%}) / "
            f"{r['spanrl_sys_s']:.2f} ({r['spanrl_sys_s'] / r['spanrl_cpu_s']:.0%}), {r['baseline_minflt']:,} / "
            f"{r['spanrl_minflt']:,}" for r in rows))
    print(f"slope {k:+.2f} s/night -> night 30 projected at {n30:.1f} s ({n30 / first['spanrl_s']:.1f}x night 1)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nights", type=int, default=8)
    p.add_argument("--rollouts", type=int, default=10_000, help="rollouts per night (6 spans each)")
    p.add_argument("--memory-limit", default="auto",
                   help="DuckDB's limit for both chains (auto: what `spanrl ingest` takes by default here)")
    p.add_argument("--dir", type=Path, default=None, help="work folder (default: a new temp dir)")
    p.add_argument("--resume", action="store_true", help="continue the nights recorded in DIR/nightly.jsonl")
    args = p.parse_args()
    args.memory_limit = resolve_memory_limit(args.memory_limit)  # the same bytes for both chains
    print(f"memory limit {args.memory_limit} (bare conversion and spanrl alike)", flush=True)
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-nightly-"))
    root.mkdir(parents=True, exist_ok=True)
    log = root / "nightly.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()] if args.resume and log.is_file() else []
    if not args.resume:
        log.write_text("")
    for night in range(len(rows), args.nights):
        rows.append(run_night(root, night, args.rollouts, args.memory_limit))
        with open(log, "a") as fh:
            fh.write(json.dumps(rows[-1]) + "\n")
        print(f"night {night + 1}: spanrl {rows[-1]['spanrl_s']:.2f}s, bare {rows[-1]['baseline_s']:.2f}s", flush=True)
    report(rows)
    print(f"\nresults: {log}")


if __name__ == "__main__":
    main()
