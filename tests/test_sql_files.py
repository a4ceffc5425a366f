"""Every SQL file of every stage opens with its header (aiosql's habit): ``-- name: <object>`` with
the parameters it takes in parentheses (``$name`` bound values, ``${name}`` quoted literals), then a
one-line purpose. The declared parameters must be exactly the ones its SQL uses."""

from __future__ import annotations

import ast
import re
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


# A string literal that reads like a statement (these keywords, upper case as the code writes SQL)
_STATEMENT = re.compile(r"\b(SELECT|CREATE|INSERT|COPY|UPDATE|DELETE|WITH)\b")
MAX_INLINE_SQL_LINES = 3


def inline_sql(source: str) -> list[tuple[int, int]]:
    """(line, lines) of every string literal in ``source`` (docstrings aside) that holds SQL and spans
    more than MAX_INLINE_SQL_LINES lines: such a statement belongs in a sql/ file."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = {}
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))
        if not is_text or id(node) in docstrings:
            continue
        lines = node.end_lineno - node.lineno + 1
        if lines > MAX_INLINE_SQL_LINES and _STATEMENT.search(ast.get_source_segment(source, node) or ""):
            found[node.lineno] = lines
    return sorted(found.items())


def test_the_inline_sql_check_finds_a_long_statement() -> None:
    source = ('"""A docstring that may SELECT\\nwords\\nover\\nlines."""\n'
              'X = "SELECT 1"\n'
              'Y = f"""SELECT a,\n  b\n FROM t\n WHERE c = {1}"""\n')
    assert inline_sql(source) == [(3, 4)]


def test_no_long_sql_statement_outside_sql_files() -> None:
    """docs/architecture.md: statements over ~3 lines live in sql/ files, next to the code that runs them."""
    code = [p for p in ROOT.glob("*/*.py") if (p.parent / "__init__.py").exists()
            and not p.parent.name.startswith((".", "tests", "bench", "examples"))]
    assert len(code) > 50
    bad = [f"{p.relative_to(ROOT)}:{line} ({n} lines)" for p in code for line, n in inline_sql(p.read_text())]
    assert not bad, "move these statements into the stage's sql/ folder: " + ", ".join(bad)
