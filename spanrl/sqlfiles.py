"""SQL text from a stage's ``sql/`` folder, and the one way strings are quoted into SQL.

Each stage keeps its statements as package data (``<stage>/sql/<name>.sql``) and reads them through
one ``SqlFiles`` bound to its own package, so a stage never reads another stage's SQL by path.
Values that can be bound go in as ``$name`` parameters; table-function arguments inside views and
COPY targets cannot, so they come through ``sql_literal`` (the only quoting helper; unit-tested).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from spanrl.errors import InputError


def sql_literal(value: str | Path | list[str] | list[Path]) -> str:
    """Quote a path, glob or list of them as a DuckDB literal: the only way strings enter SQL text."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    text = str(value)
    if "\x00" in text:
        raise InputError(f"{text!r}: a path cannot contain a NUL byte")
    return "'" + text.replace("'", "''") + "'"


class SqlFiles:
    """The ``sql/`` folder of one stage package (``SqlFiles("spanrl.ingest")``)."""

    def __init__(self, package: str) -> None:
        self.package = package

    def _file(self, name: str):
        return resources.files(self.package).joinpath("sql", f"{name}.sql")

    def read(self, name: str) -> str:
        """The text of ``<stage>/sql/<name>.sql``."""
        return self._file(name).read_text()

    def exists(self, name: str) -> bool:
        return self._file(name).is_file()

    def render(self, name: str, **literals: str | Path | list) -> str:
        """``read`` with each ``${key}`` replaced by ``sql_literal(value)``; nothing else is pasted."""
        text = self.read(name)
        for key, value in literals.items():
            text = text.replace("${" + key + "}", sql_literal(value))
        if "${" in text:
            raise RuntimeError(f"{self.package}: {name}.sql: a ${{...}} placeholder was left unfilled")
        return text
