"""One stage-2 statement taken apart: variant queries timed on the build's own connection, just before it runs.

    .venv/bin/python bench/stage2_pieces.py --rollouts 100000 bench/pieces/digests.py
    .venv/bin/python bench/stage2_pieces.py --rollouts 100000 --explain bench/pieces/llm_calls.py

bench/stage2_repeat.py says which statements cost; this says what inside one of them does. A pieces file
(bench/pieces/*.py) names the statement (BEFORE: a text it contains, e.g. "TEMP TABLE _span_facts AS")
and its VARIANTS: {label: SQL, or a function of the statement's own query (the SELECT it creates or
copies) that returns one}. The lake is
bench/stage2_repeat.py's (one night of bench/nightly.py's traffic, kept in --dir and reused); a rebuild
(``spanrl transitions build --rebuild``) runs in this process up to the statement, where every relation
it reads exists as the build made it; each variant then runs there, best CPU seconds of --repeat, with
the first row of its result (so two variants can be seen to agree), and the build stops. --explain also
writes ``EXPLAIN ANALYZE`` of the statement itself and prints its operators by time. Each variant should
aggregate its rows (a bare count(*) lets DuckDB skip the columns). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import re
import resource
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import stage2_repeat  # noqa: E402  (bench/ is sys.path[0] when run as a script)

from tests.helpers.wrapped import statement_query  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def operators(plan: str, top: int = 15) -> list[tuple[float, str]]:
    """The slowest operators of an ``EXPLAIN ANALYZE`` box drawing: (seconds, name), slowest first."""
    lines, found = plan.splitlines(), []
    for i, line in enumerate(lines):
        for m in re.finditer(r"╭─ ([A-Za-z_ ]+?) ─", line):
            for j in range(i + 1, min(i + 80, len(lines))):
                if lines[j][m.start():].startswith("╰"):
                    box = lines[j - 1][m.start():]
                    t = re.search(r"(\d+(?:\.\d+)?)(ms|s|µs)\s*$", box[:box.find("│", 1)].rstrip())
                    if t:
                        found.append((float(t[1]) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[t[2]], f"{m[1]} (line {i})"))
                    break
    return sorted(found, reverse=True)[:top]


class _Stop(BaseException):  # not an Exception: the build's own handlers (quarantine) must not catch it
    pass


class _Hooked(stage2_repeat.night_profile._Timed):
    """A connection that runs the variants before the first statement containing ``before``, then stops."""

    def __init__(self, con: duckdb.DuckDBPyConnection, args: argparse.Namespace, pieces: dict) -> None:
        super().__init__(con, [])
        object.__setattr__(self, "_args", args)
        object.__setattr__(self, "_pieces", pieces)

    def execute(self, query, *a, **kw):
        if self._pieces["BEFORE"] in str(query):
            self._run(str(query))
            raise _Stop
        return super().execute(query, *a, **kw)

    def _run(self, statement: str) -> None:
        print(f"\nbefore: {' '.join(statement.split())[:110]}")
        for label, variant in self._pieces["VARIANTS"].items():
            sql = variant(statement_query(statement)) if callable(variant) else variant
            best, first = float("inf"), None
            try:
                for _ in range(self._args.repeat):
                    c0 = _cpu()
                    first = self._con.execute(sql).fetchone()
                    best = min(best, _cpu() - c0)
            except duckdb.Error as exc:  # reported, not raised: the build would take it for a bad trace
                print(f"  {'-':>7}        {label}  -> {type(exc).__name__}: {str(exc).splitlines()[0][:90]}")
                continue
            print(f"  {best:7.3f} CPU s  {label}  -> {str(first)[:80]}")
        if self._args.explain:
            plan = self._con.execute("EXPLAIN ANALYZE " + statement_query(statement)).fetchall()[0][1]
            self._args.explain.write_text(plan)
            print(f"\n  EXPLAIN ANALYZE of the statement ({self._args.explain}), slowest operators:")
            for seconds, name in operators(plan):
                print(f"  {seconds:7.3f} s  {name}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("pieces", type=Path, help="a pieces file: BEFORE and VARIANTS (bench/pieces/*.py)")
    p.add_argument("--rollouts", type=int, default=10_000, help="rollouts in the lake (6 spans each)")
    p.add_argument("--repeat", type=int, default=2, help="runs of each variant (the best is printed)")
    p.add_argument("--explain", type=Path, nargs="?", const=Path(tempfile.gettempdir()) / "stage2_explain.txt",
                   default=None, help="also EXPLAIN ANALYZE the statement (its plan written to this file)")
    p.add_argument("--dir", type=Path, default=None,
                   help="work folder, shared with bench/stage2_repeat.py (default: its rebuild folder)")
    args = p.parse_args()
    pieces = runpy.run_path(str(args.pieces))
    root = args.dir or Path(tempfile.gettempdir()) / f"bench-stage2-rebuild-{args.rollouts}"
    data = root / "data"
    if not (data / "lake" / "spans").is_dir():
        stage2_repeat.night_profile.nightly.write_night(data / "otel", 0, args.rollouts)
        subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s"],
                       check=True, capture_output=True)
    from spanrl.cli import cli

    connect = duckdb.connect
    duckdb.connect = lambda *a, **kw: _Hooked(connect(*a, **kw), args, pieces)
    try:
        cli(["transitions", "build", "--data", str(data), "--settle", "0s", "--rebuild"], standalone_mode=False)
    except _Stop:
        return
    finally:
        duckdb.connect = connect
    raise SystemExit(f"no statement of the build contains {pieces['BEFORE']!r}")


if __name__ == "__main__":
    main()
