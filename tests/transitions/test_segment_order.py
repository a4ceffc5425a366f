"""Every file stage 2 writes in a key order holds it, on a builder that keeps no insertion order.

The builder's connection runs with ``preserve_insertion_order = false`` (transitions/connect.py): its
temp tables come out of joins and aggregates in any order, so only an ORDER BY in the statement that
writes a file puts the file's rows in order. A segment table is written in ``tables.ORDER``'s order
(what readers prune row groups by), a snapshot part in (rollout_id, step) (``read_snapshot``'s
promise), the digests in rollout order (the content hash's). The lake is bench/ui_lake.py's
generated traffic, large enough (39k spans, two row groups per file) for two threads to split it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from ui_lake import write_lake  # noqa: E402

ROLLOUTS = 6000


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from spanrl.transitions.build import build_transitions
    from spanrl.transitions.config import make_ingest_config

    data = tmp_path_factory.mktemp("ordered")
    write_lake(data, ROLLOUTS)
    build_transitions(make_ingest_config(data=data, threads=2))
    return data


def _out_of_order(path: Path, key: str) -> int:
    """Rows of ``path`` (in file order) whose ``key`` tuple is smaller than the row before's."""
    con = duckdb.connect()
    con.execute("SET threads = 1")
    return con.execute(
        f"SELECT count(*) FROM (SELECT ({key}) AS k, lag(({key})) OVER (ORDER BY file_row_number) AS prev "
        f"FROM read_parquet('{path}', file_row_number = true)) WHERE k < prev").fetchall()[0][0]


def test_the_builder_keeps_no_insertion_order(built: Path) -> None:
    from spanrl.transitions.config import make_ingest_config
    from spanrl.transitions.connect import open_lake

    con = open_lake(make_ingest_config(data=built))
    assert con.execute("SELECT current_setting('preserve_insertion_order')").fetchall() == [(False,)]


def test_every_segment_table_is_written_in_its_key_order(built: Path) -> None:
    from spanrl.transitions.tables import ORDER, tables_dir

    segments = [p.parent for p in tables_dir(built).rglob("rollouts.parquet")]
    assert segments
    for segment in segments:
        for table, key in {**ORDER, "transitions": "rollout_id, step", "digests": "rollout_id"}.items():
            path = segment / f"{table}.parquet"
            assert path.is_file(), path
            n = duckdb.sql(f"SELECT count(*) FROM '{path}'").fetchall()[0][0]
            assert n > 1 or table == "rewards", (path, n)
            assert _out_of_order(path, key) == 0, f"{path}: rows not in ({key}) order"


def test_the_snapshot_reads_in_rollout_and_step_order(built: Path) -> None:
    from spanrl.transitions.snapshot import read_snapshot

    table, _ = read_snapshot(built)
    keys = list(zip(table.column("rollout_id").to_pylist(), table.column("step").to_pylist(), strict=True))
    assert len(keys) > 10_000
    assert keys == sorted(keys)
