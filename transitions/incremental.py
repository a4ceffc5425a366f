"""Which traces a build must recompute, and the lake as that build sees it (docs/incremental.md).

The unit of reuse is the **trace**: every stage-2 step (the span tree and rollout identity, agent
repair, LLM calls and tool calls, explicit rewards and AIR) reads only the spans of one trace, and a
rollout is computed from all of its traces together. A build therefore recomputes the traces that
something new could change and reuses every other row:

* traces with spans or log records in lake files that appeared since the last build, or that lived
  in lake files that are gone (retention, compaction);
* traces of rollouts that were still waiting (incomplete) - the lake's clock moved on;
* traces of rollouts whose feedback changed (a feedback file added, edited or removed);
* closed over rollouts: a rollout spanning several traces is recomputed with all of them, and a
  recomputed trace that turns out to join an older rollout pulls that rollout's traces in too;
* and over cross-trace twins: a stored trace that may hold the other recording of a recomputed
  trace's LLM call (``incremental/twins.sql``) is recomputed with it, so llm_calls.sql merges the two.

What the recomputed traces need to know about the rest of the lake (the lake's clock; which rollout
ids, trace rollouts and response ids exist elsewhere, for feedback resolution) comes from the stored
tables of the last build (``_prior_*`` relations, ``spanrl_lake_now_ns``), so the rows come out
exactly as a build over the whole lake would make them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from spanrl.layout import lake_dir
from spanrl.sqlfiles import sql_literal
from spanrl.transitions.sqlfiles import read_sql
from spanrl.transitions.tables import global_file, segment_files

PRIOR_SCHEMAS = {
    "_p_traces": "trace_id VARCHAR, rollout_id VARCHAR, lake_files VARCHAR[], start_ns BIGINT, end_ns BIGINT, lone_call BOOLEAN",
    "_p_rollouts": "rollout_id VARCHAR, trace_ids VARCHAR[], complete BOOLEAN",
    "_p_responses": "response_id VARCHAR, trace_id VARCHAR, span_id VARCHAR, rollout_id VARCHAR",
    "_p_feedback": "file VARCHAR, line BIGINT, rollout_id VARCHAR",
}
MAX_CLOSURE_ROUNDS = 8  # each round only when a recomputed trace joined an older rollout (rare)


@dataclass
class Plan:
    """What a build recomputes. ``full``: every trace (first build, --rebuild, another config or
    release); otherwise ``_touched`` on the connection holds the traces, ``why`` counts them."""

    full: bool
    reason: str = ""
    new_files: list[str] = field(default_factory=list)
    gone_files: list[str] = field(default_factory=list)
    why: dict[str, int] = field(default_factory=dict)
    traces: int = 0
    rounds: int = 1
    segments: dict[str, int] = field(default_factory=dict)  # written / rewritten / reused
    read_files: list[str] = field(default_factory=list)  # lake files an incremental run read
    conventions: list[str] | None = None  # the conventions stacked for llm_calls (None: rows were given)
    seconds: dict[str, float] = field(default_factory=dict)  # rows: compute + segment write


def lake_clocks(con: duckdb.DuckDBPyConnection, data: Path, span_files: list[str]) -> dict[str, int]:
    """The clock each span file contributes (newest span end or ingest time, ns), read once per file."""
    if not span_files:
        return {}
    root = str(Path(data).resolve())
    paths = [f"{root}/{f}" for f in span_files]
    rows = con.execute(f"""SELECT filename, greatest(max(end_ns), max(epoch_ns(ingested_at)))
                           FROM read_parquet({sql_literal(paths)}, filename = true, union_by_name = true)
                           GROUP BY filename""").fetchall()
    return {f[len(root) + 1:]: int(c or 0) for f, c in rows}


def register_priors(con: duckdb.DuckDBPyConnection, data: Path, state: dict[str, Any] | None) -> None:
    """Views ``_p_*`` over the last build's stored bookkeeping (empty tables when there is none)."""
    sources = {"_p_traces": "_traces", "_p_rollouts": "rollouts", "_p_responses": "_responses"}
    for view, table in sources.items():
        files = [str(p) for p in segment_files(data, state or {}, table)]
        cols = ", ".join(c.split()[0] for c in PRIOR_SCHEMAS[view].split(", "))
        _files_view(con, view, files, cols)
    fb = global_file(data, state or {}, "_feedback_detail")
    _files_view(con, "_p_feedback", [str(fb)] if fb else [], "file, line, rollout_id")


def _files_view(con: duckdb.DuckDBPyConnection, view: str, files: list[str], cols: str) -> None:
    if files:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {cols} FROM read_parquet({sql_literal(files)})")
    else:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {view} ({PRIOR_SCHEMAS[view]})")


def plan_touched(con: duckdb.DuckDBPyConnection, data: Path, new_files: list[str], gone_files: list[str],
                 changed_feedback: list[str]) -> Plan:
    """Fill ``_touched(trace_id)`` with the seeds of an incremental build, closed over rollouts.

    Needs ``_p_*`` (``register_priors``) and ``_feedback`` (``feedback.load_feedback``)."""
    root = str(Path(data).resolve())
    spans = [f"{root}/{f}" for f in new_files if f.startswith("lake/spans/")]
    logs = [f"{root}/{f}" for f in new_files if f.startswith("lake/logs/")]
    con.execute("CREATE OR REPLACE TEMP TABLE _new_spans AS " + (
        f"SELECT DISTINCT trace_id FROM read_parquet({sql_literal(spans)}, union_by_name = true)" if spans
        else "SELECT NULL::VARCHAR AS trace_id WHERE false"))
    con.execute("CREATE OR REPLACE TEMP TABLE _new_logs AS " + (
        f"""SELECT DISTINCT nullif(trace_id, '') AS trace_id, attributes->>'gen_ai.response.id' AS response_id
            FROM read_parquet({sql_literal(logs)}, union_by_name = true)""" if logs
        else "SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS response_id WHERE false"))
    con.execute("CREATE OR REPLACE TEMP TABLE _gone AS SELECT unnest($g::VARCHAR[]) AS path", {"g": gone_files})
    con.execute("CREATE OR REPLACE TEMP TABLE _changed_feedback AS SELECT unnest($f::VARCHAR[]) AS name",
                {"f": [Path(f).name for f in changed_feedback]})
    con.execute("CREATE OR REPLACE TEMP TABLE _seeds AS " + read_sql("incremental/seeds"))
    close_over_rollouts(con, "_seeds")
    why = dict(con.execute("SELECT why, count(DISTINCT trace_id) FROM _seeds GROUP BY 1 ORDER BY 1").fetchall())
    n = con.execute("SELECT count(*) FROM _touched").fetchall()[0][0]
    return Plan(full=False, new_files=new_files, gone_files=gone_files, why=why, traces=n)


def close_over_rollouts(con: duckdb.DuckDBPyConnection, seeds: str) -> None:
    """``_touched`` := ``seeds``' traces plus every trace of an older rollout that shares one with them
    (just the seeds when none of them is a stored trace: the common night of brand-new traces)."""
    known = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT trace_id FROM {seeds}) SEMI JOIN _p_traces USING (trace_id)"
                        ).fetchall()[0][0]
    sql = read_sql("incremental/closure").replace("_closure_seeds", seeds) if known else (
        f"SELECT DISTINCT trace_id FROM {seeds} WHERE trace_id IS NOT NULL")
    con.execute(f"CREATE OR REPLACE TEMP TABLE _touched AS {sql}")


def joined_older(con: duckdb.DuckDBPyConnection) -> int:
    """After a partial run: add to ``_touched`` (closed again) the traces of older rollouts that a
    recomputed trace now belongs to, and the stored traces a recomputed trace may share an LLM call
    with (``incremental/twins.sql``: one call recorded in two traces that reached the lake on different
    nights); how many traces were added (0: the run is complete)."""
    con.execute("CREATE OR REPLACE TEMP TABLE _twin_traces AS " + read_sql("incremental/twins"))
    twins = con.execute("SELECT count(*) FROM _twin_traces").fetchall()[0][0]
    older = con.execute("SELECT count(*) FROM rollouts SEMI JOIN _p_rollouts USING (rollout_id)").fetchall()[0][0]
    if not (twins or older):
        return 0  # every recomputed rollout is new, or already computed with all its traces below
    before = con.execute("SELECT count(*) FROM _touched").fetchall()[0][0]
    con.execute("""CREATE OR REPLACE TEMP TABLE _seeds2 AS
                    SELECT trace_id FROM _touched
                    UNION SELECT t.trace_id FROM (SELECT unnest(trace_ids) AS trace_id, rollout_id FROM _p_rollouts) t
                    SEMI JOIN rollouts r ON r.rollout_id = t.rollout_id
                    UNION SELECT trace_id FROM _twin_traces""")
    close_over_rollouts(con, "_seeds2")
    return con.execute("SELECT count(*) FROM _touched").fetchall()[0][0] - before


def files_of_touched(con: duckdb.DuckDBPyConnection, new_files: list[str], existing: set[str]) -> list[str]:
    """The lake files an incremental run reads: the new ones plus those the touched traces lived in."""
    old = [f for (f,) in con.execute("""SELECT DISTINCT unnest(lake_files) FROM _p_traces
                                        SEMI JOIN _touched USING (trace_id)""").fetchall()]
    return sorted((set(new_files) | set(old)) & existing)


def restrict_lake(con: duckdb.DuckDBPyConnection, data: Path, files: list[str]) -> None:
    """``spans`` and ``logs`` as temp views over ``files``, the touched traces only (a log record with
    no trace id is kept: it may name a recomputed call's response id)."""
    root = str(Path(data).resolve())
    db = con.execute("SELECT current_database()").fetchall()[0][0]  # `main.x` would name temp.main.x here
    for table, extra in (("spans", ""), ("logs", " OR coalesce(trace_id, '') = ''")):
        paths = [f"{root}/{f}" for f in files if f.startswith(f"lake/{table}/")]
        if not paths:
            con.execute(f'CREATE OR REPLACE TEMP VIEW {table} AS SELECT * FROM "{db}".main.{table} WHERE false')
            continue
        con.execute(f"""CREATE OR REPLACE TEMP VIEW {table} AS
                        SELECT * FROM read_parquet({sql_literal(paths)}, hive_partitioning = true, union_by_name = true)
                        WHERE trace_id IN (SELECT trace_id FROM _touched){extra}""")


def fill_priors(con: duckdb.DuckDBPyConnection) -> None:
    """``_prior_*`` (read by _feedback_rewards.sql): the stored rollouts, trace rollouts and response
    ids of every trace this run does not recompute."""
    # views, not tables: only a feedback row ever probes them. _touched is closed over rollouts, so a
    # stored rollout is recomputed exactly when its first trace is.
    con.execute("""CREATE OR REPLACE TEMP VIEW _prior_rollout_ids AS
                   SELECT r.rollout_id FROM _p_rollouts r ANTI JOIN _touched t ON t.trace_id = r.trace_ids[1]""")
    con.execute("""CREATE OR REPLACE TEMP VIEW _prior_trace_rollouts AS
                   SELECT trace_id, rollout_id FROM _p_traces ANTI JOIN _touched USING (trace_id)""")
    con.execute("""CREATE OR REPLACE TEMP VIEW _prior_responses AS
                   SELECT response_id, trace_id, span_id, rollout_id FROM _p_responses ANTI JOIN _touched USING (trace_id)""")


def traces_table_sql(data: Path, span_files: list[str] | None, log_files: list[str] | None) -> str:
    """SELECT for a segment's ``_traces``: per recomputed trace, its rollout, the lake files holding
    it (span files, log files with its trace id or naming one of its calls' response ids) and the
    counts the build summary adds up. ``None`` file lists: every lake file (a full build)."""
    root = str(Path(data).resolve())

    def source(table: str, files: list[str] | None) -> str:
        if files is None:
            glob = f"{root}/lake/{table}/*/*.parquet"
            has = any((lake_dir(root) / table).glob("*/*.parquet"))
            return f"read_parquet({sql_literal(glob)}, filename = true, union_by_name = true)" if has else ""
        paths = [f"{root}/{f}" for f in files if f.startswith(f"lake/{table}/")]
        return f"read_parquet({sql_literal(paths)}, filename = true, union_by_name = true)" if paths else ""

    parts = []
    if src := source("spans", span_files):
        parts.append(f"SELECT trace_id, filename FROM {src} WHERE trace_id IN (SELECT trace_id FROM _trace_rollouts)")
    if src := source("logs", log_files):
        parts.append(f"""SELECT coalesce(c.trace_id, l.trace_id) AS trace_id, l.filename FROM {src} l
                         LEFT JOIN (SELECT response_id, min(trace_id) AS trace_id FROM _rollout_calls
                                    WHERE response_id IS NOT NULL GROUP BY 1) c
                           ON coalesce(l.trace_id, '') = '' AND c.response_id = l.attributes->>'gen_ai.response.id'
                         WHERE coalesce(c.trace_id, l.trace_id) IN (SELECT trace_id FROM _trace_rollouts)""")
    files = " UNION ".join(parts) if parts else "SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS filename WHERE false"
    return read_sql("incremental/traces").replace("/*FILES*/", files).replace("/*ROOT_LEN*/", str(len(root) + 2))
