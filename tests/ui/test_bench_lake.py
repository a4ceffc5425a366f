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
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    from spanrl.ingest.config import make_ingest_config
    from spanrl.transitions.build import build_transitions

    built, generated = tmp_path_factory.mktemp("built"), tmp_path_factory.mktemp("generated")
    for data in (built, generated):
        write_lake(data, ROLLOUTS)
    build_transitions(make_ingest_config(data=built))
    write_stage2_tables(generated, ROLLOUTS)
    return _tables(built), _tables(generated)


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


def test_rollout_summary_counts_air_hits_and_failed_tools(both: tuple[dict, dict]) -> None:
    """The summary a build writes for the UI, over the real build's tables: every 7th rollout's
    failing tool is one AIR hit and one failed tool run; the generated lake's summary is the same."""
    from spanrl.ui.data import create_rollout_summary

    built, generated = both
    con = duckdb.connect()
    for name, files in built.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({[str(p) for p in files]!r})")
    create_rollout_summary(con)
    rows = con.execute("SELECT rollout_id, air_hits, n_tool_errors, n_tool_calls FROM rollout_summary").fetchall()
    assert len(rows) == ROLLOUTS
    for rollout_id, air_hits, tool_errors, tool_calls in rows:
        n = int(rollout_id[1:])
        assert (air_hits, tool_errors, tool_calls) == (int(n % 7 == 3), int(n % 7 == 3), 1 + n % 2), rollout_id
    same = "SELECT * FROM rollout_summary EXCEPT ALL SELECT * FROM read_parquet($files)"
    assert con.execute(same, {"files": [str(p) for p in generated["rollout_summary"]]}).fetchall() == []
