"""``spanrl sql`` over a big lake: each relation's ``count(*)`` against ``count(*) from spans``.

    .venv/bin/python bench/sql.py --rollouts 40000          # ~240k spans, as in issue 11

Builds a lake with ``spanrl ingest`` (the generator of bench/ingest.py: six spans per rollout), then
runs each query as its own ``spanrl sql`` process (start-up included, as a user sees it) and prints
seconds, peak RSS and the ratio to ``count(*) from spans``. Target (issue 11): every ratio <= 3 and
RSS under the 2 GB memory limit. The stage-2 relations are read from the tables the build
materialised (``transitions/_tables``); ``--live`` deletes them first to show what computing the
views per query costs. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_ingest", HERE / "ingest.py")
bench_ingest = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(bench_ingest)

QUERIES = {
    "spans": "select count(*) from spans",
    "llm_calls": "select count(*) from llm_calls",
    "tool_calls": "select count(*) from tool_calls",
    "rewards": "select count(*) from rewards",
    "rollouts": "select count(*) from rollouts",
    "tokens by model by day": "select model, date_trunc('day', make_timestamp(start_ns // 1000)) as day, "
                              "sum(input_tokens), sum(output_tokens) from llm_calls group by all",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rollouts", type=int, default=40_000)
    p.add_argument("--dir", type=Path, default=None)
    p.add_argument("--live", action="store_true", help="remove the materialised tables: views computed per query")
    args = p.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="spanrl-sql-"))
    data = root / "data"
    if not (data / "transitions").is_dir():
        bench_ingest.generate(data / "otel", args.rollouts * 6)
        bench_ingest.measure([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s"])
    if args.live:
        shutil.rmtree(data / "transitions" / "_tables", ignore_errors=True)
    rows = {}
    for name, query in QUERIES.items():
        rows[name] = bench_ingest.measure([sys.executable, "-m", "spanrl", "sql", "--data", str(data),
                                           "--format", "csv", query])
    base = rows["spans"]["seconds"]
    print(f"\n{args.rollouts:,} rollouts ({'views computed per query' if args.live else 'materialised tables'})")
    print(f"  {'query':<26}{'seconds':>9}{'x spans':>9}{'peak RSS MB':>13}")
    for name, r in rows.items():
        print(f"  {name:<26}{r['seconds']:>9.2f}{r['seconds'] / base:>9.2f}{r['rss_mb']:>13,.0f}")
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
