"""Stage 2's step lists (transitions/pipeline.py) say what each step reads, and the runner holds them to it."""

from __future__ import annotations

import re

import duckdb
import pytest

from spanrl.transitions.pipeline import (
    CONNECTIONS,
    PRIOR_INPUTS,
    SNAPSHOT_STEPS,
    STAGE1,
    STAGE2_STEPS,
    STEP_LISTS,
    TRANSITION_STEPS,
    Step,
    check_declared,
    declared,
    run_steps,
)
from spanrl.transitions.sqlfiles import read_sql

# Registered before the steps run: stage 1's relations, the feedback rows and priors, the bound AIR rules.
INPUTS = {*STAGE1, *PRIOR_INPUTS, "_feedback", "_air_rules"}
# every list in the order they run (STEP_LISTS is the doc table's order: an incremental plan's lists last)
RUN_ORDER = ("LAST_BUILD_STEPS", "PLAN_STEPS", "PRIOR_STEPS", "LAKE_STEPS", "STAGE2_STEPS", "TRANSITION_STEPS",
             "ROUND_STEPS", "REWRITE_STEPS", "PUBLISH_STEPS", "DIGEST_STEPS", "SNAPSHOT_STEPS")
assert set(RUN_ORDER) == set(STEP_LISTS) and STAGE2_STEPS and TRANSITION_STEPS and SNAPSHOT_STEPS
STEPS = [s for name in RUN_ORDER for s in STEP_LISTS[name]]
KNOWN = INPUTS | {s.creates for s in STEPS}


def _relations_read(sql: str) -> set[str]:
    """The known relations a SELECT names after FROM / JOIN (comments left out)."""
    text = "\n".join(line.split("--")[0] for line in sql.splitlines())
    return {m.lower() for m in re.findall(r"\b(?:from|join)\s+([a-z_][a-z0-9_]*)", text, re.IGNORECASE)} & KNOWN


@pytest.mark.parametrize("step", [s for s in STEPS if s.sql], ids=lambda s: f"{s.creates}:{s.sql}")
def test_each_step_reads_what_it_declares(step: Step) -> None:
    assert _relations_read(read_sql(step.sql)) == set(step.reads), f"{step.sql}.sql: fix Step.reads in pipeline.py"


def test_generated_steps_read_what_they_declare() -> None:
    air = next(s for s in STAGE2_STEPS if s.creates == "_air_rule_hits")
    assert _relations_read(read_sql("rewards/_air_rule_hits")) == set(air.reads)


def test_every_input_is_made_by_an_earlier_step() -> None:
    made = set(INPUTS)
    for step in STEPS:
        assert set(step.reads) <= made, f"{step.creates} reads {set(step.reads) - made} before any step makes it"
        made.add(step.creates)
    assert step.kind in ("table", "view", "heavy") and all(s.kind in ("table", "view", "heavy") for s in STEPS)


def test_runner_names_the_step_whose_input_is_missing() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE _span_facts AS SELECT 1 AS x")  # llm_calls never made
    with pytest.raises(RuntimeError, match=r"'_span_tree' reads llm_calls, which nothing created"):
        run_steps(con, STAGE2_STEPS, materialize=True)


def test_runner_creates_tables_or_views_in_order() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT 1 AS x")
    steps = [Step("_b", ("a",), None, "table"), Step("_c", ("_b",), None, "heavy")]
    bodies = {"_b": lambda: ("SELECT x + $k AS x FROM a", {"k": 1}), "_c": lambda: ("SELECT x * 2 AS x FROM _b", None)}
    run_steps(con, steps, materialize=True, generated=bodies)
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    assert kinds["_b"] == kinds["_c"] == "LOCAL TEMPORARY"  # tables (bound values: a table step only)
    assert con.execute("SELECT x FROM _c").fetchall() == [(4,)]
    run_steps(con, steps, materialize=False, generated=bodies)  # the table becomes a view (dropped first)
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall())
    assert kinds["_b"] == "LOCAL TEMPORARY" and kinds["_c"] == "VIEW"


@pytest.mark.parametrize("step", [s for s in STEPS if s.sql], ids=lambda s: f"{s.creates}:{s.sql}")
def test_each_step_file_declares_its_step(step: Step) -> None:
    """`-- reads:` / `-- creates:` in the file's header are its Step's (run_steps checks it on load too)."""
    check_declared(step)


def test_a_declared_file_is_a_steps_file_and_one_step_per_relation() -> None:
    """A header that says `-- creates:` belongs to a step (no file claims a relation nothing runs it
    for; a files step's ``_empty`` file is its body for no files), and on each connection
    (``CONNECTIONS``) one step creates a relation."""
    from importlib import resources
    from pathlib import Path

    root = Path(str(resources.files("spanrl.transitions") / "sql"))
    claimed = {str(f.relative_to(root))[:-4] for f in root.rglob("*.sql")
               if declared(str(f.relative_to(root))[:-4])[1] is not None}
    assert claimed == {s.sql for s in STEPS if s.sql} | {f"{s.sql}_empty" for s in STEPS if s.files}
    assert {n for lists in CONNECTIONS.values() for n in lists} == set(STEP_LISTS)
    for connection, lists in CONNECTIONS.items():
        creates = [s.creates for name in lists for s in STEP_LISTS[name]]
        assert len(creates) == len(set(creates)), (connection, sorted({c for c in creates if creates.count(c) > 1}))


def test_a_file_that_disagrees_with_its_step_is_refused_naming_the_file() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE _span_tree AS SELECT 1 AS trace_id, 'r' AS rollout_id")
    wrong = Step("_trace_rollouts", ("_span_tree", "spans"), "rollouts/_trace_rollouts")
    with pytest.raises(RuntimeError, match=r"transitions/sql/rollouts/_trace_rollouts\.sql declares '-- reads: _span_tree'"):
        run_steps(con, [wrong], materialize=True)
