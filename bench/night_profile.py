"""Where one incremental night of ``spanrl ingest`` spends its time, statement by statement.

    .venv/bin/python bench/night_profile.py --rollouts 10000      # the night of bench/nightly.py

Ingests one night of bench/nightly.py's generated traffic into a fresh data root, then times a
second, equal night in this process: every DuckDB statement the chain runs (its first line and
seconds), the time between statements (Python: planning files, writing state, printing), and the
imports, against DuckDB's bare ``read_ndjson -> parquet`` of the same files. Wall and CPU seconds
(the process's, all DuckDB threads) per statement, sorted, then summed per purpose (stage 1, LLM-call
extraction, span tree + rollouts, ...) in units of the bare conversion, which is what a ratio target
is made of, with the minor page faults of the run and of its heaviest statements, two passes over
the lake's span attributes (reading one key; reading every key stage 2 uses) and what a substring gate
costs over the attribute text against over a text of the attribute keys alone. This is the breakdown
the README's "Nightly ingest" section quotes. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tests.helpers.wrapped import WrappedConnection  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_nightly", HERE / "nightly.py")
nightly = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(nightly)


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# The attribute keys stage 2's SQL reads by name (transitions/sql, ingest/sql/tool_calls.sql, llm_calls.sql,
# llm_macros.sql, 2026-11-27): what one narrow per-span pass would have to extract.
STAGE2_ATTRIBUTE_KEYS = """
    agentlightning.rollout_id agentops.entity.output agentops.task.output ai.toolCall.args ai.toolCall.id
    ai.toolCall.name ai.toolCall.result error.type gen_ai.agent.name gen_ai.evaluation.name
    gen_ai.evaluation.score.label gen_ai.evaluation.score.value gen_ai.operation.name gen_ai.response.id
    gen_ai.tool.call.arguments gen_ai.tool.call.id gen_ai.tool.call.result gen_ai.tool.name openinference.span.kind
    spanrl.response_logprobs spanrl.reward spanrl.reward.name spanrl.rollout.ended spanrl.rollout.purpose
    spanrl.rollout_id spanrl.task_id tool.id tool.name tool.parameters tool_call.id traceloop.entity.input
    traceloop.entity.name traceloop.entity.output traceloop.span.kind agent.name
    traceloop.association.properties.langgraph_node langsmith.metadata.langgraph_node gen_ai.provider.name
    gen_ai.system gen_ai.request.model gen_ai.response.model gen_ai.usage.input_tokens gen_ai.usage.output_tokens
    gen_ai.request.temperature gen_ai.response.finish_reasons""".split()


def attribute_passes(lake_spans: str) -> None:
    """CPU seconds of one pass over every lake span's attributes: reading one key (what a second parse
    of the attribute JSON costs) and reading all of STAGE2_ATTRIBUTE_KEYS (the narrow per-span pass a
    redesigned stage 2 would start from), each as the best of 3."""
    con = duckdb.connect()
    n = con.execute(f"SELECT count(*) FROM read_parquet('{lake_spans}')").fetchone()[0]
    paths = "[" + ", ".join(f"'$.\"{k}\"'" for k in STAGE2_ATTRIBUTE_KEYS) + "]"
    for label, expr in (("one key", "attributes->>'spanrl.rollout_id'"),
                        (f"all {len(STAGE2_ATTRIBUTE_KEYS)} keys stage 2 reads", f"json_extract_string(attributes, {paths})")):
        best = min(_cpu(con, f"SELECT count(x) FROM (SELECT {expr} AS x FROM read_parquet('{lake_spans}'))")
                   for _ in range(3))
        print(f"  one pass reading {label} from the attributes of all {n:,} lake spans: {best:.3f} CPU s "
              f"({best / n * 1e6:.2f} us/span)")
    # The substring gates every statement runs scan the whole attribute text (prompts and all); a text of
    # the attribute keys alone is what a narrow pass could test instead: its size, cost, and one test on each.
    con.execute(f"CREATE TEMP TABLE _text AS SELECT CAST(attributes AS VARCHAR) AS a, "
                f"array_to_string(json_keys(attributes), chr(31)) AS k FROM read_parquet('{lake_spans}')")
    size_a, size_k = con.execute("SELECT avg(strlen(a)), avg(strlen(k)) FROM _text").fetchone()
    costs = {}
    for label, sql in (("build", f"SELECT max(strlen(array_to_string(json_keys(attributes), chr(31)))) "
                                 f"FROM read_parquet('{lake_spans}')"),
                       ("test text", "SELECT bool_or(contains(a, 'openinference.span.kind')) FROM _text"),
                       ("test keys", "SELECT bool_or(contains(k, 'openinference.span.kind')) FROM _text")):
        costs[label] = min(_cpu(con, sql) for _ in range(3))
    print(f"  attribute text {size_a:,.0f} B/span, its keys alone {size_k:,.0f} B/span: building the key text "
          f"{costs['build']:.3f} CPU s; one substring test over the text {costs['test text']:.3f} s, over the "
          f"keys {costs['test keys']:.3f} s (all {n:,} spans)")


def _cpu(con: duckdb.DuckDBPyConnection, sql: str) -> float:
    """CPU seconds of this process (all DuckDB threads) to run ``sql`` to the end."""
    c0 = time.process_time()
    con.execute(sql).fetchall()
    return time.process_time() - c0


class _Timed(WrappedConnection):
    """A DuckDB connection whose execute/sql calls are timed into ``log`` (everything else passes through)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, log: list) -> None:
        super().__init__(con)
        object.__setattr__(self, "_log", log)

    def _timed(self, method: str, query, *args, **kw):
        t0, c0, f0 = time.perf_counter(), time.process_time(), _minor_faults()
        result = getattr(self._con, method)(query, *args, **kw)
        self._log.append((t0, time.perf_counter(), " ".join(str(query).split()), time.process_time() - c0,
                          _minor_faults() - f0))
        return self if result is self._con else result

    def execute(self, query, *args, **kw):
        return self._timed("execute", query, *args, **kw)

    def sql(self, query, *args, **kw):
        return self._timed("sql", query, *args, **kw)


# What each statement is for, by the `-- name:` of its SQL file (or its first words): the purposes the
# ratio target is spent on. Anything unnamed is "other".
PURPOSES = [
    ("stage 1 (OTLP JSON -> lake Parquet)", ("spans_load", "logs_load", "lines_", "spans_dedupe", "logs_dedupe",
                                             "spans_duplicates", "logs_duplicates", "trace_batches", "log_batches",
                                             "otlp_types", "read_ndjson")),
    ("LLM-call extraction (probe + llm_calls)", ("llm_calls", "llm_macros", "_llm_spans", "coalesce(bool_or(",
                                                 "llm_call_columns", "mapped_convention")),
    ("tool_calls", ("tool_calls",)),
    ("span tree + rollouts", ("_span_tree", "_trace_rollouts", "_rollout_status", "_agent_repairs", "_rollout_calls",
                              "_rollout_tasks", "name: rollouts", "macros")),
    ("rewards / AIR / feedback", ("_explicit_rewards", "_feedback", "feedback_rows", "_air_", "name: rewards",
                                  "_p_feedback", "read_json", "read_csv")),
    ("digests / hash / snapshot", ("rollout_digests", "content_hash", "rollout_air", "_rollout_rewards",
                                   "apply_advantages", "rollout_advantages", "advantage_stats", "_digests")),
    ("segments + incremental plan", ("_responses", "_traces", "coverage", "_new_", "seeds", "closure", "twins",
                                     "_touched", "_prior_", "lake_clocks", "spans_touched", "logs_touched",
                                     "segment_hits", "FROM llm_calls) ORDER BY", "REPLACE (")),
    ("transition rows + credit", ("transition_base", "transitions AS", "_rollout_frame", "transition_rows")),
]


def purpose(statement: str) -> str:
    for name, keys in PURPOSES:
        if any(k in statement[:400] for k in keys):
            return name
    return "other (summary, state, settings)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=10_000)
    p.add_argument("--top", type=int, default=20, help="statements listed")
    p.add_argument("--dump", type=Path, default=None,
                   help="also write every statement (start, end, CPU s, minor faults, purpose, SQL) as JSON lines")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="night-profile-"))
    data = root / "data"
    nightly.write_night(data / "otel", 0, args.rollouts)
    subprocess.run([sys.executable, "-m", "spanrl", "ingest", "--data", str(data), "--settle", "0s"],
                   check=True, capture_output=True)
    files = nightly.write_night(data / "otel", 1, args.rollouts)
    t0, c0, f0 = time.perf_counter(), time.process_time(), _minor_faults()
    duckdb.sql(f"COPY (FROM read_ndjson({[str(f) for f in files]})) TO '{root / 'bare.parquet'}'")
    bare, bare_cpu, bare_faults = time.perf_counter() - t0, time.process_time() - c0, _minor_faults() - f0

    log: list = []
    connect = duckdb.connect
    duckdb.connect = lambda *a, **kw: _Timed(connect(*a, **kw), log)  # every connection the chain opens
    t_import, c_import = time.perf_counter(), time.process_time()
    from spanrl.cli import cli

    t_run, f_run, s_run = time.perf_counter(), _minor_faults(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
    try:
        cli(["ingest", "--data", str(data), "--settle", "0s"], standalone_mode=False)
    finally:
        duckdb.connect = connect
    t_end, c_end = time.perf_counter(), time.process_time()

    faults_run, sys_run = _minor_faults() - f_run, resource.getrusage(resource.RUSAGE_SELF).ru_stime - s_run
    print("\nattribute passes (the lake after both nights):")
    attribute_passes(str(data / "lake" / "spans" / "*" / "*.parquet"))
    shutil.rmtree(root, ignore_errors=True)
    if args.dump:
        with open(args.dump, "w") as fh:
            for a, b, q, c, f in log:
                fh.write(json.dumps({"start": a - t_run, "wall": b - a, "cpu": c, "faults": f,
                                     "purpose": purpose(q), "sql": q}) + "\n")
    in_sql = sum(e[1] - e[0] for e in log)
    cpu_sql = sum(e[3] for e in log)
    by_statement: dict[str, list[float]] = {}
    for a, b, q, c, _ in log:
        key = q[:100]
        wall_cpu = by_statement.setdefault(key, [0.0, 0.0, 0.0])
        wall_cpu[0] += b - a
        wall_cpu[1] += c
        wall_cpu[2] += 1
    total, total_cpu = t_end - t_import, c_end - c_import
    print(f"\nnight of {args.rollouts * nightly.SPANS_PER_ROLLOUT:,} spans, in this process (no start-up on either "
          f"side): spanrl {total:.2f} s wall / {total_cpu:.2f} s CPU, bare COPY {bare:.2f} s / {bare_cpu:.2f} s CPU "
          f"(ratio {bare / total:.2f} wall, {bare_cpu / total_cpu:.2f} CPU)")
    print(f"  importing spanrl.cli {t_run - t_import:.2f} s; {len(log)} statements {in_sql:.2f} s wall / "
          f"{cpu_sql:.2f} s CPU; Python between them (lazy imports included) {t_end - t_run - in_sql:.2f} s")
    print(f"  minor page faults: {faults_run:,} in the run (bare COPY {bare_faults:,}; the run's system time "
          f"{sys_run:.2f} s), {sum(e[4] for e in log):,} inside statements; most: "
          + "; ".join(f"{e[4]:,} {e[2][:40]}" for e in sorted(log, key=lambda e: -e[4])[:3]))
    short = [v for v in by_statement.values() if v[0] < 0.05]
    print(f"  {sum(v[2] for v in short):.0f} statements under 50 ms: {sum(v[0] for v in short):.2f} s "
          f"({100 * sum(v[0] for v in short) / max(in_sql, 1e-9):.0f}% of SQL wall time)")
    print(f"\n  {'wall s':>7} {'CPU s':>7}  statement")
    for q, (wall, cpu, _) in sorted(by_statement.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {wall:7.3f} {cpu:7.3f}  {q}")
    groups: dict[str, list[float]] = {}
    for a, b, q, c, _ in log:
        g = groups.setdefault(purpose(q), [0.0, 0.0, 0])
        g[0] += b - a
        g[1] += c
        g[2] += 1
    print(f"\n  by purpose, in bare-conversion units (bare = {bare:.2f} s wall, {bare_cpu:.2f} s CPU; "
          f"a 0.35x chain may spend {1 / 0.35:.2f} units, 0.5x 2.00):")
    print(f"  {'wall s':>7} {'CPU s':>7} {'units':>6} {'CPU u':>6} {'stmts':>5}  purpose")
    for name, (wall, cpu, n) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print(f"  {wall:7.2f} {cpu:7.2f} {wall / bare:6.2f} {cpu / bare_cpu:6.2f} {n:5d}  {name}")
    rest = total - in_sql
    print(f"  {rest:7.2f} {total_cpu - cpu_sql:7.2f} {rest / bare:6.2f} {(total_cpu - cpu_sql) / bare_cpu:6.2f}"
          f"        Python (imports, planning, state, printing)")


if __name__ == "__main__":
    main()
