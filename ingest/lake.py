"""Stage 1's API for the stages after it: the one ingest module they import (besides ``ingest.config``).

Later stages need five things of the trace lake, and get them here rather than from the modules
that implement them (``views``, ``lakeio``, ``housekeeping``): a connection that reads the lake
(``open_readable``, guarded, for SQL a user wrote; ``open_for_builder``, ``read_parquet`` views for the
snapshot builder, which locks it with ``lock_down`` once its inputs are read), the writer lock
(``lake_lock``, with ``finish_interrupted`` for housekeeping a crash left), the LLM-call conventions
(``register_llm_calls``: stack the conventions, ``call_relation_sql``: the ``llm_calls`` /
``tool_calls`` SELECTs to materialise), and the ``coverage`` query (``coverage_sql``). So a stage never
reads ``ingest/sql/`` by path, and stage 1 may move its internals without touching its readers
(tests/test_layout.py::test_later_stages_use_the_stage1_api).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from spanrl.ingest.housekeeping import finish_interrupted
from spanrl.ingest.lakeio import PARQUET_OPTIONS, crash_point, lake_lock  # noqa: F401  (crash_point: stage 2's too)
from spanrl.ingest.views import (
    CONVENTION_PROBES,
    LLM_CONVENTIONS,
    lake_glob,
    lock_down,
    mapped_conventions,
    open_guarded,
    parquet_dataset,
    register_call_views,
    register_conventions,
    register_dataset,
)
from spanrl.ingest.views import connect as _connect
from spanrl.ingest.views import read_sql as _read_sql

__all__ = [
    "CONVENTION_PROBES", "LLM_CONVENTIONS", "PARQUET_OPTIONS", "call_relation_sql", "coverage_sql", "finish_interrupted", "lake_glob",
    "lake_lock", "lock_down", "open_for_builder", "open_guarded", "open_readable", "parquet_dataset",
    "register_call_views", "register_dataset", "register_llm_calls", "register_llm_macros",
]

# The stage-1 relations a later stage may materialise from their SQL (the rest are views on the lake),
# in the order they read each other: _span_facts (span_facts.sql) is what llm_calls, tool_calls and
# stage 2 read of every span's attributes.
CALL_RELATIONS = ("_span_facts", "llm_calls", "tool_calls")
_CALL_SQL = {"_span_facts": "span_facts"}


def open_readable(data: Path, config_file: Path | None = None) -> duckdb.DuckDBPyConnection:
    """The lake with stage 1's views, as Arrow datasets on a locked connection: no statement on it
    can read or write a file (for SQL a user wrote)."""
    return _connect(Path(data), read_only=True, config_file=config_file)


def open_for_builder(data: Path, config_file: Path | None = None) -> duckdb.DuckDBPyConnection:
    """The lake tables as ``read_parquet`` views plus the LLM macros, unlocked: the snapshot builder
    creates ``llm_calls`` / ``tool_calls`` itself (``register_llm_calls``, ``call_relation_sql``) and
    then locks the connection to the folders it reads (``lock_down``)."""
    return _connect(Path(data), read_only=False, call_views=False, config_file=config_file)


def register_llm_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Stage 1's SQL macros (``spanrl_span_agent``: hierarchy repair, ...) on ``con``; idempotent."""
    con.execute(_read_sql("llm_macros"))


def register_llm_calls(con: duckdb.DuckDBPyConnection, data: Path, config_file: Path | None = None) -> list[str]:
    """Stack the LLM-call conventions that some span on ``con`` uses (probed in one scan), with the
    config file's ``[[conventions]]`` mappings, so ``call_relation_sql('llm_calls')`` can be bound;
    returns their names (``genai_latest``, ...)."""
    views = register_conventions(con, mapped_conventions(Path(data), config_file), probe=True)
    return [v.removeprefix("llm_calls_") for v in views]


def call_relation_sql(name: str) -> str:
    """The SELECT of a stage-1 relation a later stage materialises (``CALL_RELATIONS``)."""
    if name not in CALL_RELATIONS:
        raise ValueError(f"{name!r}: stage 1's call relations are {', '.join(CALL_RELATIONS)}")
    return _read_sql(_CALL_SQL.get(name, name))


def coverage_sql() -> str:
    """The SELECT of ``coverage`` (LLM calls without readable content) over ``llm_calls`` and ``spans``."""
    return _read_sql("coverage")
