"""Every SQL file of every stage opens with its header (aiosql's habit): ``-- name: <object>`` with
the parameters it takes in parentheses (``$name`` bound values, ``${name}`` quoted literals), then a
one-line purpose. The declared parameters must be exactly the ones its SQL uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SQL_FILES = sorted(p for stage in ("ingest", "transitions") for p in (ROOT / stage / "sql").rglob("*.sql"))
HEADER = re.compile(r"^-- name: (?P<name>[a-z_][a-z0-9_]*)(?:\((?P<params>[^)]*)\))?$")
PARAM = re.compile(r"\$\{[a-z_]+\}|\$[a-z_]+")


def _code(text: str) -> str:
    """The SQL without its comments (parameters mentioned in prose are not used)."""
    return "\n".join(line.split("--")[0] for line in text.splitlines())


def test_the_stages_have_sql_files() -> None:
    assert len(SQL_FILES) > 30


@pytest.mark.parametrize("path", SQL_FILES, ids=[str(p.relative_to(ROOT)) for p in SQL_FILES])
def test_sql_file_header(path: Path) -> None:
    lines = path.read_text().splitlines()
    m = HEADER.match(lines[0])
    assert m, f"{path}:1: start with '-- name: <object>' (+ '(<$params>)'), got {lines[0]!r}"
    assert m["name"].endswith(path.stem), f"{path}:1: the name {m['name']!r} should name the file's object"
    assert len(lines) > 1 and re.match(r"^-- \S", lines[1]), f"{path}:2: a one-line purpose comment"
    declared = {p.strip() for p in (m["params"] or "").split(",") if p.strip()}
    used = set(PARAM.findall(_code(path.read_text())))
    assert declared == used, f"{path}:1: declares {sorted(declared)}, uses {sorted(used)}"
