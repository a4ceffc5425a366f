"""The SQL views over the trace lake (docs/lake.md), and the one place SQL text is loaded and quoted.

Every view is a plain ``.sql`` file under ``ingest/sql/``; ``connect()`` opens an in-memory DuckDB
over the lake's Parquet files and registers them in ``VIEW_ORDER``. This is the small reader API
later stages use: ``spanrl.transitions`` adds rewards/rollouts on top, ``spanrl.query`` locks it down.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from spanrl.config import find_config_file
from spanrl.ingest.mapped import load_mapped_conventions, register_mapped
from spanrl.ingest.pyliteral import register_py_literal_json
from spanrl.ingest.scan import FILES_COLUMNS, REJECTS_COLUMNS, empty_rows_sql, file_state_path
from spanrl.inplace import in_place_dataset
from spanrl.sqlfiles import NO_AUTO_CHECKPOINT, SqlFiles, sql_literal

if TYPE_CHECKING:  # pyarrow (0.4 s with .dataset, which imports pandas): only the guarded connection needs it
    import pyarrow.dataset as ds

# Registration order matters: later views read earlier ones.
VIEW_ORDER = ["spans", "logs", "llm_calls", "tool_calls", "coverage"]

# The conventions registry: one file ingest/sql/llm_calls/<name>.sql per entry, each registered as
# view llm_calls_<name> and stacked (UNION ALL BY NAME) into _llm_call_conventions, which
# llm_calls.sql reads. Adding a convention = its file + one line here (+ its expected-rows test,
# tests/data/views/llm_calls/<name>.test; tests/ingest/test_registry.py checks all three agree).
LLM_CONVENTIONS = [
    "genai_events",      # GenAI semconv <= 1.36: per-message events (log records or span events)
    "genai_latest",      # GenAI semconv >= 1.37: gen_ai.input/output.messages (span, log record, span event)
    "openinference",     # Arize OpenInference flattened llm.input_messages.*
    "openllmetry",       # Traceloop OpenLLMetry <= 0.54 flattened gen_ai.prompt.*
    "langsmith",         # LangSmith OTel export
    "vercel_ai",         # Vercel AI SDK
    "logfire",           # Pydantic Logfire request_data / response_data
    "agent_lightning",   # token-id-only spans (serving engines, Agent Lightning)
    "payload",           # whole request/response bodies (Langfuse, MLflow, ADK, OpenInference bodies)
    "litellm",           # LiteLLM's OTel logger: the raw provider request/response (raw_gen_ai_request)
]

# Per registered convention, a cheap test that every span it turns into a row passes (a conjunct
# implied by its own WHERE, over the columns of _span_facts: attr_keys, the attribute values v, the
# event names, the span name) and, for one that also makes rows from log records alone, the same over
# `logs`. The snapshot builder runs them all in one scan over the facts of the spans it reads and
# stacks only the conventions some span (log record) passes (``present_conventions``): a convention
# the night's telemetry never uses costs no scan and no binding. A probe that is NOT implied by its
# convention's WHERE would drop rows without a word, so tests/ingest/test_registry.py builds
# llm_calls with and without the probes on every fixture and recording. Keys, not the attribute text:
# a test on the keys is ~6x cheaper than on the text, which holds the prompts (bench/night_profile.py).
CONVENTION_PROBES: dict[str, tuple[str, str | None]] = {
    "genai_events": ("""NOT has_attr(attr_keys, 'gen_ai.input.messages')
                        AND coalesce(span_fact(v, 'gen_ai.operation.name') IN ('chat', 'text_completion', 'generate_content')
                                     OR span_fact(v, 'llm.request.type') IN ('chat', 'completion'), false)""", None),
    "genai_latest": ("""has_attr(attr_keys, 'gen_ai.input.messages') OR has_attr(attr_keys, 'gen_ai.output.messages')
                        OR list_contains(event_names, 'gen_ai.client.inference.operation.details')""",
                     "event_name = 'gen_ai.client.inference.operation.details' AND span_id IS NOT NULL"),
    "openinference": ("span_fact(v, 'openinference.span.kind') = 'LLM'", None),
    "openllmetry": ("contains(attr_keys, chr(31) || 'gen_ai.prompt.0.') OR contains(attr_keys, chr(31) || 'gen_ai.completion.0.')",
                    None),
    "langsmith": ("has_attr(attr_keys, 'gen_ai.prompt')", None),
    "vercel_ai": ("has_attr(attr_keys, 'ai.prompt.messages')", None),
    "logfire": ("has_attr(attr_keys, 'request_data')", None),
    "agent_lightning": ("contains(attr_keys, 'token_ids')", None),
    # a row needs one of its sources (payload.sql, kinds), each named by a top-level key; the '"LLM"' its
    # WHERE also looks for in the text the keys cannot tell, so every span with an input.value passes
    "payload": ("""has_attr(attr_keys, 'input.value') OR has_attr(attr_keys, 'langfuse.observation.type')
                   OR has_attr(attr_keys, 'mlflow.spanType') OR has_attr(attr_keys, 'gcp.vertex.agent.llm_request')
                   OR has_attr(attr_keys, 'events')""", None),
    "litellm": ("\"name\" = 'raw_gen_ai_request'", None),
}


_SQL = SqlFiles("spanrl.ingest")
read_sql = _SQL.read
sql_exists = _SQL.exists
render_sql = _SQL.render


def lake_glob(lake: Path, table: str) -> str | None:
    """The Parquet glob of one lake table, or None when it holds no file yet."""
    folder = lake / table
    if not any(folder.glob("*/*.parquet")):
        return None
    return str(folder / "*" / "*.parquet")


def connect(data: Path, read_only: bool = True, call_views: bool = True,
            config_file: Path | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake tables and stage 1's views registered.

    ``read_only`` (the default, for anything that runs SQL a user wrote): the lake is exposed as
    Arrow datasets and the connection is locked (``lock_down``): it reads and writes no file at all,
    whatever the statement. Without it (the snapshot builder, which locks itself once its inputs
    are read) the tables are ``read_parquet`` views. Stage 2's views (rewards, rollouts) are added
    by ``spanrl.transitions``; ``spanrl.query.connect`` is the guarded connection with both.

    ``call_views=False`` registers only the macros, not the conventions nor ``llm_calls``/``tool_calls``:
    the snapshot builder creates those once, as temp tables, from the same SQL files, stacking only
    the conventions the spans it reads use (creating a view binds its whole SQL, and binding
    ``llm_calls`` is a fixed ~0.2 s cost).

    ``config_file`` (default: ``DATA/spanrl.toml`` or ``./spanrl.toml``) may add ``[[conventions]]``
    mappings to the registry.
    """
    con = open_guarded(data) if read_only else _open_files(data)
    register_call_views(con, data, call_views, config_file)
    if read_only:
        lock_down(con)
    return con


def _open_files(data: Path) -> duckdb.DuckDBPyConnection:
    """The lake tables as ``read_parquet`` views (the builder's fast path; needs file access)."""
    lake = Path(data) / "lake"
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(NO_AUTO_CHECKPOINT)
    for table in ("spans", "logs"):
        glob = lake_glob(lake, table)
        if glob is None:
            con.execute(read_sql(f"{table}_empty"))
        else:
            con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet("
                        f"{sql_literal(glob)}, hive_partitioning = true, union_by_name = true)")
    return con


def open_guarded(data: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB on which the lake is registered Arrow datasets, not yet locked.

    The datasets are lazy (DuckDB pushes projections and filters into pyarrow's Parquet scan) and
    read through Python's file access, not DuckDB's, so once ``lock_down`` turns DuckDB's off the
    lake stays queryable and nothing else is reachable. Besides spans and logs: ``rejects``
    (``lake/_rejects``) and ``span_files`` (``lake/_files.parquet``).
    """
    lake = Path(data) / "lake"
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # it would print into piped CSV/JSON output
    con.execute(NO_AUTO_CHECKPOINT)
    con.execute("SET temp_directory = ''")  # never spills, also not while stage-2 relations are computed
    for table in ("spans", "logs"):
        if lake_glob(lake, table) is None:
            con.execute(read_sql(f"{table}_empty"))
        else:
            register_dataset(con, table, lambda ext, t=table: _lake_dataset(lake / t, hive=True, json_ext=ext))
    extras = {"rejects": (lake / "_rejects", REJECTS_COLUMNS), "span_files": (file_state_path(lake), FILES_COLUMNS)}
    for name, (path, columns) in extras.items():
        if path.is_file() or (path.is_dir() and any(path.glob("*.parquet"))):
            con.register(name, _lake_dataset(path, hive=False))
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {empty_rows_sql(columns)}")
    return con


def parquet_dataset(path: Path | list[Path], json_ext: bool = True) -> ds.Dataset:
    """One Parquet file, a folder of them, or a list of files (one table stored in several segments)
    as a lazy dataset a guarded connection can register; a list gets the union of its schemas."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    if isinstance(path, list):
        files = [str(p) for p in path]
        remote = in_place_dataset(files, _parquet_format(json_ext), hive=False)  # an S3 root read in place
        if remote is not None:
            return remote
        parts = [ds.dataset(f, format=_parquet_format(json_ext)).schema for f in files]
        schema = pa.unify_schemas(parts, promote_options="permissive")
        return ds.dataset(files, format=_parquet_format(json_ext), schema=schema)
    return _lake_dataset(Path(path), hive=False, json_ext=json_ext)


def _parquet_format(json_ext: bool) -> ds.ParquetFileFormat:
    import pyarrow.dataset as ds

    return ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(
        arrow_extensions_enabled=json_ext))


def _lake_dataset(path: Path, hive: bool, json_ext: bool = True) -> ds.Dataset:
    """A lazy pyarrow dataset over lake Parquet: with ``json_ext`` JSON columns carry Arrow's JSON
    extension type (``register_dataset`` uses it to find them); ``date=...`` folders become a DATE column."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    fmt = _parquet_format(json_ext)
    partitioning = ds.partitioning(pa.schema([("date", pa.date32())]), flavor="hive") if hive else None
    files = sorted(str(p) for p in path.glob("*/*.parquet")) if hive else None
    listed = files if hive else [str(path)] if path.is_file() else sorted(str(p) for p in path.glob("*.parquet"))
    remote = in_place_dataset(listed or [], fmt, hive)  # an S3 root read in place (spanrl/inplace.py)
    if remote is not None:
        return remote
    if hive:
        return ds.dataset(files, format=fmt, partitioning=partitioning, partition_base_dir=str(path))
    return ds.dataset(str(path), format=fmt)


def register_dataset(con: duckdb.DuckDBPyConnection, name: str, make: Callable[[bool], ds.Dataset]) -> None:
    """Register a lake dataset as ``name`` with its JSON columns typed JSON.

    Arrow's JSON extension type has no comparison kernels, so a filter DuckDB pushes into the scan
    (a top-N over an expression of a JSON column does) fails inside pyarrow. So the scan reads JSON
    columns as plain text (``make(False)``, registered as ``name__arrow``) and the view ``name``
    casts them back to JSON. ``make(json_ext)`` builds the dataset."""
    with_ext = make(True)
    json_cols = [f.name for f in with_ext.schema if "json" in str(f.type).lower() and "extension" in str(f.type).lower()]
    if not json_cols:
        con.register(name, with_ext)
        return
    con.register(f"{name}__arrow", make(False))
    casts = ", ".join(f'CAST("{c}" AS JSON) AS "{c}"' for c in json_cols)
    con.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT * REPLACE ({casts}) FROM "{name}__arrow"')


def register_call_views(con: duckdb.DuckDBPyConnection, data: Path, call_views: bool = True,
                        config_file: Path | None = None) -> None:
    """The LLM macros and, with ``call_views``, the conventions (with the ``[[conventions]]``
    mappings of the config file) and ``llm_calls``/``tool_calls``/``coverage`` on ``con``. Without
    (the snapshot builder) the conventions are stacked later, over the spans the build reads
    (``register_conventions(..., probe=True)``)."""
    con.execute(read_sql("llm_macros"))
    if not call_views:
        return
    register_span_facts(con)
    register_conventions(con, mapped_conventions(data, config_file))
    for name in VIEW_ORDER[2:]:
        register_view(con, name)


def register_span_facts(con: duckdb.DuckDBPyConnection) -> None:
    """``_span_facts`` (span_facts.sql: every span's narrow facts, from one parse of its attributes) as a
    view over ``spans`` (the snapshot builder makes it a temp table: ``ingest.lake.CALL_RELATIONS``)."""
    con.execute(f"CREATE OR REPLACE VIEW _span_facts AS {read_sql('span_facts')}")


def mapped_conventions(data: Path, config_file: Path | None = None) -> list[dict]:
    """The ``[[conventions]]`` mappings of the config file (``DATA/spanrl.toml`` by default), checked."""
    return load_mapped_conventions(find_config_file(Path(data), config_file), LLM_CONVENTIONS)


def lock_down(con: duckdb.DuckDBPyConnection, readable: list[Path] | tuple[Path, ...] = ()) -> None:
    """From now on ``con`` reaches no file but those under ``readable``, and that cannot be undone.

    ``enable_external_access = false`` with ``allowed_directories`` = ``readable`` (empty for a
    connection over Arrow datasets), no temp directory (DuckDB lets a connection write into its own
    spill folder: a query connection does not spill), then the configuration locked, so no SET,
    PRAGMA, RESET, ATTACH, INSTALL or LOAD changes it back. A second call is a no-op.
    """
    if con.execute("SELECT current_setting('lock_configuration')").fetchall()[0][0]:
        return
    if not readable:
        con.execute("SET temp_directory = ''")
    allowed = [str(Path(p).resolve()) + "/" for p in readable]
    con.execute(f"SET allowed_directories = {sql_literal(allowed) if allowed else '[]'}")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def register_conventions(con: duckdb.DuckDBPyConnection, mapped: list[dict] | None = None,
                         probe: bool = False) -> list[str]:
    """``_llm_spans`` (the cheap pre-filter every convention reads), one view ``llm_calls_<name>``
    per registered convention and per ``[[conventions]]`` mapping (``mapped``, ingest/mapped.py),
    and ``_llm_call_conventions``, their stack on the typed empty ``_llm_call_columns``, which
    ``llm_calls.sql`` reads. The stack is built from the registry, so a registered convention is
    never left out; with ``probe`` (the snapshot builder, over the spans it is about to read) a
    built-in convention whose ``CONVENTION_PROBES`` test no span passes is left out, since it would
    give no row: the probes read ``_span_facts``, registered here as a view when ``con`` has none.
    Returns the stacked views."""
    register_py_literal_json(con)  # litellm.sql reads Python-literal attribute values
    if probe and "_span_facts" not in {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables").fetchall()}:
        register_span_facts(con)  # what the probes read, on a connection that has none yet
    con.execute(f"CREATE OR REPLACE VIEW _llm_spans AS {read_sql('llm_spans')}")
    for conv in LLM_CONVENTIONS:
        if not sql_exists(f"llm_calls/{conv}"):
            raise RuntimeError(f"convention {conv!r} is registered in LLM_CONVENTIONS (ingest/views.py) but "
                               f"ingest/sql/llm_calls/{conv}.sql does not exist")
    views = []
    for conv in present_conventions(con) if probe else LLM_CONVENTIONS:
        con.execute(f"CREATE OR REPLACE VIEW llm_calls_{conv} AS {read_sql(f'llm_calls/{conv}')}")
        views.append(f"llm_calls_{conv}")
    views += register_mapped(con, mapped or [], read_sql)
    # internal identifiers only (registry names, checked by tests/ingest/test_registry.py)
    stack = " UNION ALL BY NAME ".join([read_sql("llm_call_columns"), *(f"SELECT * FROM {v}" for v in views)])
    con.execute(f"CREATE OR REPLACE VIEW _llm_call_conventions AS {stack}")
    return views


def present_conventions(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The registered conventions whose probe (``CONVENTION_PROBES``) some span or log record on
    ``con`` passes, in registry order: one scan over ``_span_facts`` (and one over ``logs``)."""
    on_spans = {c: p[0] for c, p in CONVENTION_PROBES.items()}
    on_logs = {c: p[1] for c, p in CONVENTION_PROBES.items() if p[1]}
    hits = _passing(con, "_span_facts", on_spans) | _passing(con, "logs", on_logs)
    return [c for c in LLM_CONVENTIONS if c in hits]


def _passing(con: duckdb.DuckDBPyConnection, source: str, tests: dict[str, str]) -> set[str]:
    """The names in ``tests`` whose predicate some row of ``source`` passes (one scan for all)."""
    if not tests:
        return set()
    cols = ", ".join(f"coalesce(bool_or({expr}), false) AS {c}" for c, expr in tests.items())
    row = con.execute(f"SELECT {cols} FROM {source}").fetchone()
    return {c for c, hit in zip(tests, row, strict=True) if hit}


def register_view(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Create view ``name`` from ``ingest/sql/<name>.sql`` if that file exists (True when it did);
    ``llm_calls`` reads the conventions ``register_conventions`` registered first."""
    if not sql_exists(name):
        return False
    con.execute(f"CREATE OR REPLACE VIEW {name} AS {read_sql(name)}")
    return True
