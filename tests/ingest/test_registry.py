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
