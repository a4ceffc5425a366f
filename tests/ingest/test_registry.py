"""The conventions registry (docs/architecture.md): every convention file is registered, every
registered convention has its file, its expected-rows test, and a place in llm_calls' stack."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from spanrl.ingest import views
from spanrl.ingest.views import LLM_CONVENTIONS, connect

VIEW_TESTS = Path(__file__).resolve().parents[1] / "data" / "views" / "llm_calls"


def convention_files() -> set[str]:
    folder = resources.files("spanrl.ingest").joinpath("sql", "llm_calls")
    return {p.name.removesuffix(".sql") for p in folder.iterdir() if p.name.endswith(".sql")}


def test_every_convention_file_is_registered() -> None:
    unregistered = convention_files() - set(LLM_CONVENTIONS)
    assert not unregistered, f"ingest/sql/llm_calls/{sorted(unregistered)}.sql: add the name to LLM_CONVENTIONS"


def test_every_registered_convention_has_its_file_and_an_expected_rows_test() -> None:
    assert len(set(LLM_CONVENTIONS)) == len(LLM_CONVENTIONS)
    assert set(LLM_CONVENTIONS) <= convention_files()
    missing = [c for c in LLM_CONVENTIONS if not (VIEW_TESTS / f"{c}.test").is_file()]
    assert not missing, f"write tests/data/views/llm_calls/<name>.test for {missing}"


def test_the_stack_holds_every_registered_convention(tmp_path: Path) -> None:
    con = connect(tmp_path)
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = '_llm_call_conventions'").fetchone()[0]
    for conv in LLM_CONVENTIONS:
        assert f"llm_calls_{conv}" in sql


def test_a_registered_convention_without_its_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "LLM_CONVENTIONS", [*LLM_CONVENTIONS, "no_such_convention"])
    with pytest.raises(RuntimeError, match="no_such_convention.sql does not exist"):
        connect(tmp_path)


def test_every_registered_convention_has_a_probe() -> None:
    assert set(views.CONVENTION_PROBES) == set(LLM_CONVENTIONS)


def _describe(con, sql: str) -> list[tuple[str, str]]:
    return sorted((r[0], r[1]) for r in con.execute(f"DESCRIBE {sql}").fetchall())


def test_the_typed_head_of_the_stack_has_exactly_the_columns_of_every_convention(tmp_path: Path) -> None:
    con = connect(tmp_path)
    every = " UNION ALL BY NAME ".join(f"SELECT * FROM llm_calls_{c}" for c in LLM_CONVENTIONS)
    assert _describe(con, views.read_sql("llm_call_columns")) == _describe(con, f"SELECT * FROM ({every})")


# Every recorded or hand-written telemetry of LLM calls: llm_calls over the builder's probed stack
# must be exactly llm_calls over the full stack (a probe not implied by its convention's WHERE
# would lose calls without a word).
PROBE_CASES = sorted(VIEW_TESTS.glob("*.test")) + sorted((VIEW_TESTS.parents[1] / "ingest").glob("captured*"))


@pytest.mark.parametrize("case", PROBE_CASES, ids=[p.stem for p in PROBE_CASES])
def test_the_builder_stacks_only_used_conventions_and_loses_no_call(case: Path, tmp_path: Path) -> None:
    from spanrl.transitions.build import open_lake
    from spanrl.transitions.config import make_ingest_config
    from tests.helpers.view_tests import parse_view_test, write_telemetry
    from tests.ingest.conftest import ingest, ingest_captured

    if case.is_dir():
        ingest_captured(case, tmp_path)
    else:
        write_telemetry(parse_view_test(case), tmp_path)
        ingest(tmp_path)
    con = open_lake(make_ingest_config(data=tmp_path, threads=2))
    mapped = views.mapped_conventions(tmp_path)
    calls = f"SELECT * REPLACE (CAST(input_messages AS VARCHAR) AS input_messages) FROM ({views.read_sql('llm_calls')}) ORDER BY ALL"
    stacked = views.register_conventions(con, mapped, probe=True)
    probed = con.execute(calls).fetchall()
    assert len(views.register_conventions(con, mapped)) == len(LLM_CONVENTIONS) + len(mapped)
    full = con.execute(calls).fetchall()
    assert full, "a probe case must hold LLM calls"
    assert probed == full
    for conv in set(LLM_CONVENTIONS) - {v.removeprefix("llm_calls_") for v in stacked}:  # left out: it had no row
        assert con.execute(f"SELECT count(*) FROM llm_calls_{conv}").fetchone()[0] == 0, conv
    assert len(stacked) < len(LLM_CONVENTIONS) + len(mapped)  # every case uses a few conventions, not all
