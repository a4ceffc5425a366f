"""spanrl/memory.py: ``--memory-limit auto`` (the default) is half of the memory this process can have,
a Ray task's share of it inside a task, never under 1 GB; every stage's DuckDB gets it, and an out-of-memory
message says what ``auto`` came to."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from spanrl import memory
from spanrl.errors import InputError, stops_on_resource_trouble
from spanrl.memory import FLOOR_MB, machine_memory, resolve_memory_limit

GIB = 2**30


def _cgroup(monkeypatch, tmp_path: Path, text: str) -> None:
    path = tmp_path / "memory.max"
    path.write_text(text + "\n")
    monkeypatch.setattr(memory, "_CGROUP_FILES", (path,))


def _duckdb_reads(value: str) -> str:
    """How DuckDB reports a memory limit of ``value`` (its units, its rounding)."""
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = '{value}'")
        return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    finally:
        con.close()


def test_auto_is_half_of_a_cgroups_limit_below_the_machines_ram(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SPANRL_TASK_THREADS", raising=False)
    _cgroup(monkeypatch, tmp_path, str(4 * GIB))
    assert machine_memory() == 4 * GIB
    assert resolve_memory_limit("auto") == "2048MB"
    assert resolve_memory_limit(" AUTO ") == "2048MB"
    _cgroup(monkeypatch, tmp_path, "max")  # cgroup v2 without a limit: the RAM
    ram = machine_memory()
    assert ram > 4 * GIB
    assert resolve_memory_limit("auto") == f"{max(ram // 2 // 2**20, FLOOR_MB)}MB"


def test_a_ray_task_takes_its_cpus_share_and_never_under_the_floor(monkeypatch, tmp_path: Path) -> None:
    _cgroup(monkeypatch, tmp_path, str(16 * GIB))
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    monkeypatch.setenv("SPANRL_TASK_THREADS", "1")  # what spanrl/workers.py's _in_task sets
    assert resolve_memory_limit("auto") == "2048MB"  # 16 GiB / 2, one CPU of four
    _cgroup(monkeypatch, tmp_path, str(2 * GIB))
    assert resolve_memory_limit("auto") == f"{FLOOR_MB}MB"


def test_an_explicit_size_is_used_as_written(monkeypatch, tmp_path: Path) -> None:
    _cgroup(monkeypatch, tmp_path, str(4 * GIB))
    for value in ("2GB", "512MB", "80%"):
        assert resolve_memory_limit(value) == value


def test_every_stage_sets_the_resolved_limit(monkeypatch, tmp_path: Path) -> None:
    """Stage 1's loader, stage 2's builder, spanrl sql and lake compaction: DuckDB runs under what
    ``auto`` resolves to, not under DuckDB's own 80 % nor a fixed 2GB."""
    from spanrl.ingest.compact import _connect
    from spanrl.ingest.config import LakeConfig
    from spanrl.ingest.load import open_work_connection
    from spanrl.query.connection import connect
    from spanrl.transitions.config import BuildConfig
    from spanrl.transitions.connect import open_lake

    monkeypatch.delenv("SPANRL_TASK_THREADS", raising=False)
    _cgroup(monkeypatch, tmp_path, str(3 * GIB))
    want = _duckdb_reads("1536MB")
    (tmp_path / "data").mkdir()
    assert LakeConfig(data=tmp_path / "data").memory_limit == "auto"  # the default
    cons = [open_work_connection(LakeConfig(data=tmp_path / "data"), tmp_path),
            open_lake(BuildConfig(data=tmp_path / "data")),
            connect(tmp_path / "data", stage2=False, memory_limit="auto"),
            _connect(tmp_path / "lake", "auto")]
    try:
        assert [c.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] for c in cons] == [want] * 4
    finally:
        for c in cons:
            c.close()


def test_out_of_memory_under_auto_says_what_auto_came_to(monkeypatch, tmp_path: Path) -> None:
    _cgroup(monkeypatch, tmp_path, str(4 * GIB))
    with pytest.raises(InputError) as err, stops_on_resource_trouble("stage 2", "auto", tmp_path, "Nothing published."):
        raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")
    assert "--memory-limit auto (= 2048MB on this machine)" in str(err.value)
