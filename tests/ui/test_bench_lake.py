"""The UI benchmark's generated stage-2 tables are what the real stage-2 build computes from its spans.

``bench/ui_lake.py`` writes the tables straight from ``range()`` (a real build of a million rollouts
takes too long for a benchmark); this checks, on a small lake, that they hold the same rows, with
the same column types, as ``spanrl transitions build`` over the same generated spans.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from ui_lake import TABLE_SQL, write_lake, write_stage2_tables  # noqa: E402

ROLLOUTS = 60  # every branch of the generator: both agents, one and two tools, failing tools


def _tables(data: Path) -> dict[str, list[Path]]:
    from spanrl.ui.data import table_files

    return table_files(data)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a data root the real stage-2 build built, one with the generated tables), same spans."""
    from spanrl.transitions.build import build_transitions
    from spanrl.transitions.config import make_ingest_config

    built, generated = tmp_path_factory.mktemp("built"), tmp_path_factory.mktemp("generated")
    for data in (built, generated):
        write_lake(data, ROLLOUTS)
    build_transitions(make_ingest_config(data=built))
    write_stage2_tables(generated, ROLLOUTS)
    return built, generated


@pytest.fixture(scope="module")
def both(roots: tuple[Path, Path]) -> tuple[dict, dict]:
    return _tables(roots[0]), _tables(roots[1])


@pytest.mark.parametrize("name", sorted(TABLE_SQL))
def test_generated_table_equals_the_build(both: tuple[dict, dict], name: str) -> None:
    built, generated = (files[name] for files in both)
    con = duckdb.connect()
    describe = "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet($files))"
    assert con.execute(describe, {"files": [str(p) for p in generated]}).fetchall() == \
        con.execute(describe, {"files": [str(p) for p in built]}).fetchall()
    rows = "SELECT * FROM read_parquet($a) EXCEPT ALL SELECT * FROM read_parquet($b)"
    for a, b in ((generated, built), (built, generated)):
        extra = con.execute(rows, {"a": [str(p) for p in a], "b": [str(p) for p in b]}).fetchall()
        assert extra == [], f"{name}: rows only in one of them, e.g. {extra[:2]}"
    n = con.execute("SELECT count(*) FROM read_parquet($a)", {"a": [str(p) for p in built]}).fetchall()[0][0]
    assert n >= ROLLOUTS


def test_held_rollouts_count_air_hits_and_failed_tools(roots: tuple[Path, Path]) -> None:
    """What the UI holds per rollout, over the real build's tables: every 7th rollout's failing tool
    is one AIR hit and one failed tool run; over the generated tables it is the same."""
    from spanrl.ui.data import HELD, Lake

    held = []
    for data in roots:
        with Lake(data).connection() as con:
            rel = con.execute(f"SELECT * EXCLUDE (snapshots) FROM {HELD} ORDER BY rollout_id")
            cols = [d[0] for d in rel.description]
            held.append([dict(zip(cols, row, strict=True)) for row in rel.fetchall()])
    built, generated = held
    assert len(built) == ROLLOUTS and built == generated
    for row in built:
        n, fails = int(row["rollout_id"][1:]), int(row["rollout_id"][1:]) % 7 == 3
        assert (row["air_hits"], row["n_tool_errors"], row["n_tool_calls"]) == (int(fails), int(fails), 1 + n % 2)
