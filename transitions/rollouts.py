"""Stage 2 in SQL: rollouts, their tree order and completeness, rewards (docs/lake.md; docs/transitions.md).

Python only registers the inputs and runs the steps; the steps and their order are
``pipeline.STAGE2_STEPS``, each one ``.sql`` file under ``sql/`` whose body is a single SELECT named
after the object it creates. The same files become plain views (``materialize=False``) or temp
tables for the snapshot builder and ``spanrl sql``, which read several of them more than once
(``materialize=True``).

Config reaches the SQL as DuckDB variables (``getvariable('spanrl_rollout_key')`` ...), because
views cannot take bound parameters; an unset variable is NULL and means "not configured".
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import duckdb

from spanrl.errors import InputError
from spanrl.ingest.lake import (
    CALL_RELATIONS,
    call_relation_sql,
    lock_down,
    register_llm_calls,
    register_llm_macros,
)
from spanrl.layout import feedback_dir, lake_dir
from spanrl.transitions.air import AirRule, air_rule_hits_sql, bad_rule_error, load_air_rules
from spanrl.transitions.config import BuildConfig
from spanrl.transitions.feedback import load_feedback
from spanrl.transitions.hashing import register_sha256
from spanrl.transitions.pipeline import STAGE2_STEPS, create, relations, run_steps
from spanrl.transitions.sqlfiles import read_sql

# The stage-1 relations stage 2 reads (B's views.py registers them).
REQUIRED = ("spans", "llm_calls", "tool_calls")

# What an incremental build knows about the traces it does not recompute (_feedback_rewards.sql
# resolves feedback against them); empty unless the builder filled them first.
PRIORS = {
    "_prior_rollout_ids": "rollout_id VARCHAR",
    "_prior_trace_rollouts": "trace_id VARCHAR, rollout_id VARCHAR",
    "_prior_responses": "response_id VARCHAR, trace_id VARCHAR, span_id VARCHAR, rollout_id VARCHAR",
}


@dataclass
class Stage2Setup:
    """What registering stage 2 found: for the manifest and the summary."""

    air_rules: list[AirRule]
    feedback_files: list[Path]
    conventions: list[str] | None = None  # the convention views llm_calls was made from (None: given rows)


def set_variables(con: duckdb.DuckDBPyConnection, cfg: BuildConfig) -> None:
    """Hand the config to the SQL: one DuckDB variable per setting (values bound, never pasted)."""
    values = {
        "spanrl_rollout_key": cfg.rollout_key,
        "spanrl_task_key": cfg.task_key,
        "spanrl_agent_regex": cfg.agent,
        "spanrl_settle_ns": int(cfg.settle_s * 1e9),
        "spanrl_missing_reward": cfg.missing_reward,
        "spanrl_include_eval": cfg.include_eval,
        "spanrl_reward_keys": cfg.reward_keys or None,  # VARCHAR[] of --reward-key names
        "spanrl_hierarchy_repair": cfg.hierarchy_repair,
        "spanrl_data_root": str(Path(cfg.data).resolve()),  # source files are stored relative to it
    }
    for name, value in values.items():
        # SET VARIABLE takes no parameters; a constant subquery does (the name is ours, not user input).
        con.execute(f"SET VARIABLE {name} = (SELECT $v)", {"v": value})


def register_stage2(con: duckdb.DuckDBPyConnection, cfg: BuildConfig, materialize: bool,
                    rules: list[AirRule] | None = None, readable: tuple[Path, ...] | None = None) -> Stage2Setup:
    """Create every stage-2 object on ``con`` (which must already have spans, llm_calls, tool_calls).
    ``rules``: the AIR rules to apply (default: those of ``cfg.config_file``).

    Once the inputs that need files are read (stage 1's tables when materialising, the feedback
    files) the connection is locked (``lock_down``, a no-op on one locked already) to ``readable``
    before any AIR rule is bound, so a rule's predicate cannot read or write host files: by default
    the data root's ``lake/`` and ``feedback/`` (what ``read_parquet`` views need); ``()`` for the
    guarded query connection, whose lake is Arrow datasets.
    """
    if readable is None:
        readable = (lake_dir(cfg.data), feedback_dir(cfg.data))
    register_llm_macros(con)  # span_facts.sql's macros, on any connection
    register_sha256(con)  # the segment writer's digests (rollout_digests.sql) run on this connection
    set_variables(con, cfg)  # _span_facts reads --rollout-key / --task-key
    conventions = _materialize_stage1(con, cfg) if materialize else None
    if not materialize and "_span_facts" not in relations(con) and "spans" in relations(con):
        create(con, "_span_facts", "VIEW", call_relation_sql("_span_facts"))
    _check_stage1(con)
    con.execute(read_sql("rollouts/macros"))
    have = relations(con)
    for name, columns in PRIORS.items():
        if name not in have:
            con.execute(f"CREATE TEMP TABLE {name} ({columns})")
    files = load_feedback(con, cfg.data)
    rules = load_air_rules(cfg.file) if rules is None else rules
    lock_down(con, readable)
    run_steps(con, STAGE2_STEPS, materialize,
              generated={"_air_rule_hits": lambda: (air_rule_hits_sql(con, rules), None)},
              errors={"_air_rule_hits": lambda exc: bad_rule_error(con, rules, exc)})
    return Stage2Setup(air_rules=rules, feedback_files=files, conventions=conventions)


def register_lake_views(con: duckdb.DuckDBPyConnection, data: Path, readable: tuple[Path, ...] | None = None) -> bool:
    """``rewards``, ``rollouts`` (and their helpers) for ``spanrl sql`` on a guarded connection
    (``spanrl.query.connect``) over a lake no build has materialised yet, which this locks; False on
    a lake without LLM-call views yet.

    Computed once, as temp tables (under the connection's memory limit), not as views: a view of the
    stage-2 SQL nests ~20 relations over ten stacked conventions, and DuckDB re-planned all of it per
    query (51 s for ``count(*) from rollouts`` on a 5-rollout lake; 2.6 s as tables).

    They use the stage-2 config the latest snapshot was built with (flags such as
    ``--rollout-key`` included, and its AIR rules), so SQL and snapshots agree on what a rollout is;
    only a lake without a snapshot yet falls back to ``DATA/spanrl.toml``.
    """
    if _missing_stage1(con):
        return False
    cfg, rules = lake_config(Path(data))
    register_stage2(con, cfg, materialize=True, rules=rules, readable=readable)
    return True


def lake_config(data: Path) -> tuple[BuildConfig, list[AirRule] | None]:
    """The stage-2 config (and AIR rules) of the latest snapshot; spanrl.toml when there is none."""
    from spanrl.transitions.config import make_ingest_config
    from spanrl.transitions.snapshot import latest_manifest

    manifest = latest_manifest(data)
    stored = dict((manifest or {}).get("config") or {})
    if not stored:
        return make_ingest_config(data=data), None
    known = {f.name for f in fields(BuildConfig)}
    values = {k: v for k, v in stored.items() if k in known and k not in ("data", "config_file", "input")}
    rules = [AirRule(**r) for r in stored.get("air_rules", [])] if "air_rules" in stored else None
    return BuildConfig(data=data, **values), rules


def _materialize_stage1(con: duckdb.DuckDBPyConnection, cfg: BuildConfig) -> list[str] | None:
    """Evaluate stage 1's span facts, LLM-call and tool-call relations once, as temp tables of the same names.

    Temp objects shadow main ones, also inside other views, so tool_calls (which reads llm_calls)
    and every stage-2 object reuse these rows instead of re-running the convention SQL each time.
    A relation already on the connection (a view of ``ingest.lake.open_readable``, or rows of a hand-built test
    lake) is copied; one that is not (the builder's ``connect(call_views=False)``) is created
    straight from its SQL file, binding that SQL once, over the conventions some span of ``spans``
    uses (``ingest.lake.register_llm_calls``: on GenAI-only traffic the other nine cost nothing).
    ``_llm_spans`` (the candidate spans) stays a view: materialising it held every candidate's
    attributes in memory (+0.2 GB peak RSS at 200k spans) and saved no CPU time.
    """
    have = relations(con)
    stacked = None
    for name in CALL_RELATIONS:
        if name in have:
            create(con, name, "TABLE", f"SELECT * FROM main.{name}")
        elif "spans" in have:
            if name == "llm_calls":
                stacked = register_llm_calls(con, cfg.data, cfg.config_file)
            create(con, name, "TABLE", call_relation_sql(name))
    return stacked


def _missing_stage1(con: duckdb.DuckDBPyConnection) -> list[str]:
    have = relations(con)
    return [n for n in REQUIRED if n not in have]


def _check_stage1(con: duckdb.DuckDBPyConnection) -> None:
    missing = _missing_stage1(con)
    if missing:
        raise InputError(f"the trace lake has no {', '.join(missing)} yet; run `spanrl ingest` first")

