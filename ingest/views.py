"""The SQL views over the trace lake (DESIGN §4), and the one place SQL text is loaded and quoted.

Every view is a plain ``.sql`` file under ``ingest/sql/``; ``connect()`` opens an in-memory DuckDB
over the lake's Parquet files and registers them in ``VIEW_ORDER``. A view whose file is not there
yet (``rewards``, ``rollouts`` come from another stage) is skipped, so the lake works on its own.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import duckdb

from spanrl.errors import InputError

# Registration order matters: later views read earlier ones.
VIEW_ORDER = ["spans", "logs", "llm_calls", "tool_calls", "rewards", "rollouts"]
# llm_calls is one UNION ALL BY NAME over one file per convention (ingest/sql/llm_calls/*.sql).
CALL_VIEWS = ("llm_calls", "tool_calls")  # the views the snapshot builder materialises itself
LLM_CONVENTIONS = ["genai_events", "genai_latest", "openinference", "openllmetry", "langsmith", "vercel_ai",
                   "logfire", "agent_lightning", "payload"]


def sql_literal(value: str | Path | list[str] | list[Path]) -> str:
    """Quote a path, glob or list of them as a DuckDB literal: the only way strings enter SQL text.

    Values that can be bound go in as ``$name`` parameters; table-function arguments inside views
    and COPY targets cannot, so they come through here.
    """
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    text = str(value)
    if "\x00" in text:
        raise InputError(f"{text!r}: a path cannot contain a NUL byte")
    return "'" + text.replace("'", "''") + "'"


def read_sql(name: str) -> str:
    """The text of ``ingest/sql/<name>.sql`` (package data)."""
    return resources.files("spanrl.ingest").joinpath("sql", f"{name}.sql").read_text()


def sql_exists(name: str) -> bool:
    return resources.files("spanrl.ingest").joinpath("sql", f"{name}.sql").is_file()


def render_sql(name: str, **literals: str | Path | list) -> str:
    """``read_sql`` with each ``${key}`` replaced by ``sql_literal(value)``; nothing else is pasted."""
    text = read_sql(name)
    for key, value in literals.items():
        text = text.replace("${" + key + "}", sql_literal(value))
    if "${" in text:
        raise RuntimeError(f"{name}.sql: a ${{...}} placeholder was left unfilled")
    return text


def lake_glob(lake: Path, table: str) -> str | None:
    """The Parquet glob of one lake table, or None when it holds no file yet."""
    folder = lake / table
    if not any(folder.glob("*/*.parquet")):
        return None
    return str(folder / "*" / "*.parquet")


def connect(data: Path, read_only: bool = True, stage2: bool = True,
            call_views: bool = True) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with every lake table and view registered.

    ``stage2=False`` leaves out the rewards/rollouts views (quicker when only the lake is needed).
    ``call_views=False`` registers the convention views but not ``llm_calls``/``tool_calls``
    themselves: the snapshot builder creates those once, as temp tables, from the same SQL files
    (creating a view binds its whole SQL, and binding ``llm_calls`` is a fixed ~0.2 s cost).

    With ``read_only`` the connection can reach nothing outside the data root (DuckDB's
    ``allowed_directories`` + ``enable_external_access = false``, locked); ``spanrl sql`` also
    refuses every statement that is not a query (see ``query.py``), so the lake cannot be written.
    """
    lake = Path(data) / "lake"
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # it would print into piped CSV/JSON output
    for table in ("spans", "logs"):
        glob = lake_glob(lake, table)
        if glob is None:
            con.execute(read_sql(f"{table}_empty"))
        else:
            con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet("
                        f"{sql_literal(glob)}, hive_partitioning = true, union_by_name = true)")
    con.execute(read_sql("llm_macros"))
    for name in VIEW_ORDER[2:]:
        if call_views or name not in CALL_VIEWS:
            register_view(con, name)
        elif name == "llm_calls":
            register_conventions(con)
    if stage2:
        from spanrl.ingest.rollouts import register_lake_views  # stage 2: rewards, rollouts (engineer C)

        register_lake_views(con, data)
    if read_only:
        root = str(Path(data).resolve())
        con.execute(f"SET allowed_directories = [{sql_literal(root)}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


def register_conventions(con: duckdb.DuckDBPyConnection) -> None:
    """``_llm_spans`` (the cheap pre-filter every convention reads)
    and one view ``llm_calls_<conv>`` per convention file: what ``llm_calls.sql`` stacks."""
    con.execute(f"CREATE OR REPLACE VIEW _llm_spans AS {read_sql('llm_spans')}")
    for conv in LLM_CONVENTIONS:
        if sql_exists(f"llm_calls/{conv}"):
            con.execute(f"CREATE OR REPLACE VIEW llm_calls_{conv} AS {read_sql(f'llm_calls/{conv}')}")


def register_view(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Create view ``name`` from ``ingest/sql/<name>.sql`` if that file exists (True when it did)."""
    if name == "llm_calls":
        register_conventions(con)
    if not sql_exists(name):
        return False
    con.execute(f"CREATE OR REPLACE VIEW {name} AS {read_sql(name)}")
    return True
