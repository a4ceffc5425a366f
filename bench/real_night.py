"""A night of real frameworks' spans against DuckDB's bare conversion of the same files.

    .venv/bin/python bench/real_night.py --spans 60000 --rounds 3
    .venv/bin/python bench/stage2_repeat.py --dir DIR --repeat 3     # then: where stage 2's time goes on it

bench/nightly.py's synthetic night has three ~1 KB chat calls per run in one convention, and no tool call
or tool result in any prompt. Real agents' nights differ: prompts that grow with every tool result,
several instrumentations on one call, handoffs, GenAI log events, LiteLLM's Python literals. This night is
the recorded runs the tests ingest (tests/helpers/mutate.py ``recordings()``: every recorded framework and
instrumentation, and the AIR corpus's runs), copied until it holds --spans spans. Each copy gets ids of
its own (as the mutation tests make them) and its clock moved on by a minute, so copies never overlap
in time and no two of them can pass for one call seen twice. The night is written to DIR/data/otel once
(a second run with the same DIR reuses it); each round then runs the bare conversion and ``spanrl ingest``
into a fresh data root, each in its own fresh process, as bench/night_floor.py does, and appends the
round to DIR/real_night.jsonl. Finally the lake is ingested into DIR/data, where bench/stage2_repeat.py
--dir DIR and bench/stage2_pieces.py --dir DIR find it. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import night_floor  # noqa: E402  (bench/ is sys.path[0] when run as a script)

from spanrl.memory import resolve_memory_limit  # noqa: E402
from tests.helpers.mutate import spans_per_copy, write_copies  # noqa: E402


def write_night(otel: Path, n_spans: int) -> list[Path]:
    """Whole copies of every recording, about ``n_spans`` spans: one traces and one logs file."""
    per_copy = spans_per_copy()
    copies = max(1, round(n_spans / per_copy))
    files = write_copies(otel, copies, name="real-night")
    print(f"{copies} copies of the recorded runs ({per_copy} spans each): {copies * per_copy:,} spans, "
          f"{sum(f.stat().st_size for f in files) / 1e6:.0f} MB", flush=True)
    return files


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spans", type=int, default=60_000, help="spans in the night (whole copies of the recordings)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--memory-limit", default="auto", help="both chains' DuckDB memory limit (default: spanrl's auto)")
    p.add_argument("--dir", type=Path, default=None, help="work folder (default: a new temp dir)")
    args = p.parse_args()
    args.memory_limit = resolve_memory_limit(args.memory_limit)
    bench_ingest = night_floor._load("bench_ingest", "ingest.py")
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-real-night-"))
    otel = root / "data" / "otel"
    files = sorted(otel.glob("*-real-night.jsonl")) or write_night(otel, args.spans)
    log, kinds = root / "real_night.jsonl", ("bare", "spanrl")
    rounds = []
    for r in range(args.rounds):
        row = {"round": r + 1, "at": time.strftime("%Y-%m-%dT%H:%M:%S"), "memory_limit": args.memory_limit,
               **night_floor.measure_night(bench_ingest, root / "runs", files, args.memory_limit, kinds)}
        rounds.append(row)
        with open(log, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"round {r + 1}: " + ", ".join(f"{k} {row[k]['seconds']:.2f} s / {row[k]['cpu_s']:.2f} CPU s "
                                             f"({row[k]['sys_s']:.2f} system, {row[k]['rss_mb']:.0f} MB)"
                                             for k in kinds), flush=True)
    med = {k: {m: statistics.median(r[k][m] for r in rounds) for m in ("seconds", "cpu_s", "rss_mb")} for k in kinds}
    print(f"\nmedians of {len(rounds)}: bare {med['bare']['seconds']:.2f} s / {med['bare']['cpu_s']:.2f} CPU s, "
          f"spanrl {med['spanrl']['seconds']:.2f} s / {med['spanrl']['cpu_s']:.2f} CPU s: bare/spanrl "
          f"{med['bare']['seconds'] / med['spanrl']['seconds']:.2f} wall, {med['bare']['cpu_s'] / med['spanrl']['cpu_s']:.2f} "
          f"CPU, peak RSS {med['spanrl']['rss_mb'] / med['bare']['rss_mb']:.2f}x the bare conversion's")
    shutil.rmtree(root / "runs", ignore_errors=True)
    if not (root / "data" / "lake" / "spans").is_dir():  # the lake bench/stage2_repeat.py --dir reuses
        subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(root / "data"), "--settle", "0s"],
                       check=True, capture_output=True)
    print(f"results: {log}; the lake for bench/stage2_repeat.py --dir {root}")


if __name__ == "__main__":
    main()
