"""Every SQL file of every stage opens with its header (aiosql's habit): ``-- name: <object>`` with
the parameters it takes in parentheses (``$name`` bound values, ``${name}`` quoted literals), then a
one-line purpose. The declared parameters must be exactly the ones its SQL uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanrl.sqlfiles import header_problem

ROOT = Path(__file__).resolve().parents[1]
SQL_FOLDERS = sorted(p for p in ROOT.glob("*/sql") if p.is_dir() and not p.parent.name.startswith((".", "tests")))
SQL_FILES = sorted(p for folder in SQL_FOLDERS for p in folder.rglob("*.sql"))


def test_the_stages_have_sql_files() -> None:
    """Every stage's sql/ folder is checked, not only the first ones written."""
    assert {f.parent.name for f in SQL_FOLDERS} >= {"ingest", "transitions", "export", "ui", "rollout", "judge"}
    assert len(SQL_FILES) > 60


@pytest.mark.parametrize("path", SQL_FILES, ids=[str(p.relative_to(ROOT)) for p in SQL_FILES])
def test_sql_file_header(path: Path) -> None:
    assert header_problem(path.stem, path.read_text()) is None, f"{path}: {header_problem(path.stem, path.read_text())}"


def test_the_loader_refuses_a_file_without_its_header(tmp_path: Path, monkeypatch) -> None:
    """The check runs on read too (aiosql's loader validates at load time), not only here."""
    import sys

    from spanrl.sqlfiles import SqlFiles

    pkg = tmp_path / "fake_stage"
    (pkg / "sql").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sql" / "good.sql").write_text("-- name: good($x)\n-- Purpose.\nSELECT $x\n")
    (pkg / "sql" / "bad.sql").write_text("-- name: bad\n-- Purpose.\nSELECT $x -- $y in a comment is fine\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    files = SqlFiles("fake_stage")
    assert files.read("good").endswith("SELECT $x\n")
    with pytest.raises(RuntimeError, match=r"bad.sql: line 1: declares \[\], uses \['\$x'\]"):
        files.read("bad")
    sys.modules.pop("fake_stage", None)
