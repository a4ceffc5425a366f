"""Where one incremental night of ``spanrl ingest`` spends its time, statement by statement.

    .venv/bin/python bench/night_profile.py --rollouts 10000      # the night of bench/nightly.py

Ingests one night of bench/nightly.py's generated traffic into a fresh data root, then times a
second, equal night in this process: every DuckDB statement the chain runs (its first line and
seconds), the time between statements (Python: planning files, writing state, printing), and the
imports, against DuckDB's bare ``read_ndjson -> parquet`` of the same files. This is the breakdown
the README's "Nightly ingest" section quotes. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
_spec = importlib.util.spec_from_file_location("bench_nightly", HERE / "nightly.py")
nightly = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(nightly)


class _Timed:
    """A DuckDB connection whose execute/sql calls are timed into ``log`` (everything else passes through)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, log: list) -> None:
        object.__setattr__(self, "_con", con)
        object.__setattr__(self, "_log", log)

    def __getattr__(self, name: str):
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._con.__exit__(*exc)

    def _timed(self, method: str, query, *args, **kw):
        t0 = time.perf_counter()
        result = getattr(self._con, method)(query, *args, **kw)
        self._log.append((t0, time.perf_counter(), " ".join(str(query).split())))
        return self if result is self._con else result

    def execute(self, query, *args, **kw):
        return self._timed("execute", query, *args, **kw)

    def sql(self, query, *args, **kw):
        return self._timed("sql", query, *args, **kw)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=10_000)
    p.add_argument("--top", type=int, default=20, help="statements listed")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="night-profile-"))
    data = root / "data"
    nightly.write_night(data / "otel", 0, args.rollouts)
    subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s"],
                   check=True, capture_output=True)
    files = nightly.write_night(data / "otel", 1, args.rollouts)
    t0 = time.perf_counter()
    duckdb.sql(f"COPY (FROM read_ndjson({[str(f) for f in files]})) TO '{root / 'bare.parquet'}'")
    bare = time.perf_counter() - t0

    log: list = []
    connect = duckdb.connect
    duckdb.connect = lambda *a, **kw: _Timed(connect(*a, **kw), log)  # every connection the chain opens
    t_import = time.perf_counter()
    from spanrl.cli import cli

    t_run = time.perf_counter()
    try:
        cli(["ingest", "--data", str(data), "--settle", "0s"], standalone_mode=False)
    finally:
        duckdb.connect = connect
    t_end = time.perf_counter()

    shutil.rmtree(root, ignore_errors=True)
    in_sql = sum(b - a for a, b, _ in log)
    by_statement: dict[str, float] = {}
    for a, b, q in log:
        by_statement[q[:100]] = by_statement.get(q[:100], 0.0) + (b - a)
    total = t_end - t_import
    print(f"\nnight of {args.rollouts * nightly.SPANS_PER_ROLLOUT:,} spans, in this process (no start-up on either "
          f"side): spanrl {total:.2f} s, bare COPY {bare:.2f} s (ratio {bare / total:.2f})")
    print(f"  importing spanrl.cli {t_run - t_import:.2f} s; {len(log)} statements {in_sql:.2f} s; "
          f"Python between them (lazy imports included) {t_end - t_run - in_sql:.2f} s")
    for q, seconds in sorted(by_statement.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:6.3f}  {q}")


if __name__ == "__main__":
    main()
