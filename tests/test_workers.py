"""spanrl/workers.py: the split of work into groups, and --workers without Ray says how to get it."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from spanrl.cli import cli
from spanrl.workers import split_evenly


def test_split_evenly_balances_and_keeps_every_index_once() -> None:
    sizes = [10, 1, 1, 1, 7, 3, 3]
    groups = split_evenly(sizes, 2)
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    totals = sorted(sum(sizes[i] for i in g) for g in groups)
    assert totals == [13, 13]
    assert split_evenly([5], 4) == [[0]]  # fewer items than groups: no empty group
    assert split_evenly([], 3) == []


def test_workers_without_ray_say_how_to_install_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    (tmp_path / "otel").mkdir()
    (tmp_path / "otel" / "traces.jsonl").write_text('{"resourceSpans":[]}\n')
    res = CliRunner().invoke(cli, ["ingest", "--data", str(tmp_path), "--workers", "2"])
    assert res.exit_code == 2
    assert "pip install 'spanrl[scale]'" in res.output


def _duckdb_threads(tmp: str) -> tuple[int | None, int]:
    """In the calling process (a Ray task or this one): the task's thread budget and what the
    loader's DuckDB connection was set to."""
    from spanrl.ingest.config import LakeConfig
    from spanrl.ingest.load import open_work_connection
    from spanrl.memory import task_threads

    con = open_work_connection(LakeConfig(data=Path(tmp)), Path(tmp))
    try:
        return task_threads(), int(con.execute("SELECT current_setting('threads')").fetchone()[0])
    finally:
        con.close()


def _out_of_memory(tmp: str) -> None:
    con = duckdb.connect()
    con.execute("SET memory_limit = '1MB'")
    con.execute(f"SET temp_directory = '{tmp}'")
    con.execute("SELECT list(range) FROM range(10000000)").fetchall()  # a list cannot spill


def _fails() -> None:
    raise ValueError("not the machine's trouble")


def test_a_ray_tasks_duckdb_runs_on_the_tasks_cpus_not_every_core(tmp_path: Path, monkeypatch) -> None:
    """Two tasks on one 2-core node each ran DuckDB on every core (4 threads on 2 cores): they then
    took 117.6 CPU s where one process took 76.3 (bench/scale.py, 600k spans). A task's DuckDB now gets
    the one CPU Ray reserved for it; outside a task the default (every core) is unchanged."""
    ray = pytest.importorskip("ray")
    from spanrl.workers import TASK_CPUS, WorkerFailed, worker_pool

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # tests/ is not importable in a worker
    monkeypatch.setenv("RAY_ADDRESS", "")  # a local Ray for this test, never a cluster the machine may have
    try:
        with worker_pool(2) as run:
            inside = run(_duckdb_threads, [(str(tmp_path / "a"),), (str(tmp_path / "b"),)])
            # a task out of memory is the stage's own out-of-memory error (its message names --memory-limit),
            # not "a Ray task failed, re-run the command": the re-run would fail the same way
            with pytest.raises(duckdb.OutOfMemoryException, match="Out of Memory"):
                run(_out_of_memory, [(str(tmp_path / "d"),)])
            with pytest.raises(WorkerFailed, match="_fails"):
                run(_fails, [()])
    finally:
        ray.shutdown()
    assert inside == [(TASK_CPUS, TASK_CPUS)] * 2
    assert _duckdb_threads(str(tmp_path / "c")) == (None, duckdb.connect().execute(
        "SELECT current_setting('threads')").fetchone()[0])
