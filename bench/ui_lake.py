"""A synthetic data root for ``bench/ui.py``: the lake, the stage-2 tables, a snapshot and a cycle log.

Going through span files, ``spanrl ingest`` and a stage-2 build costs many minutes and gigabytes per
million spans on 2 cores; the UI benchmark only needs what a nightly ingest leaves behind, so DuckDB
writes it straight from ``range()``:

- lake rows with the lake's columns (``ingest/sql/spans_empty.sql``), laid out as ``spanrl ingest``
  writes them: one file per batch of ``CHUNK`` rollouts, rows in the order spans end (the order an
  exporter sends them), ``ROW_GROUP_SIZE`` 20480 (``ingest/load.py``). Each rollout is one trace in
  the shape of ``bench/ingest.py``'s agent: an ``invoke_agent`` root (agent ``planner`` or ``coder``),
  three GenAI ``chat`` spans (semconv >= 1.37 messages, ~300 B prompts), one or two ``execute_tool``
  spans (every 7th rollout's first tool fails: an AIR ``tool_error`` hit) and a ``spanrl.reward``
  span with the task id: 6-7 spans per rollout;
- the stage-2 tables the build materialises (``rollouts``, ``llm_calls``, ``tool_calls``,
  ``rewards``), computed from the same formulas and published with ``spanrl.transitions.tables``'
  ``write_tables`` (``tests/ui/test_bench_lake.py`` checks they equal what the real stage-2 build
  computes from the generated spans);
- a snapshot over every rollout through ``spanrl.transitions``' writer, and a cycle log through
  ``spanrl.trainer.adapter``.

Every step skips what an earlier run already wrote (``--dir`` in ``bench/ui.py``): a lake of a million
rollouts is generated once.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

T0_NS = 1_767_225_600_000_000_000  # 2026-01-01
ROLLOUT_GAP_NS = 1_000_000_000  # one rollout starts every second: 1M rollouts ~ 11.6 days
N_TASKS = 500
CHUNK = 50_000  # rollouts per lake file (~325k spans): one ingest batch
ROW_GROUP_SIZE = 20_480  # what ingest/load.py writes
ROWS_PER_PART = 50_000  # snapshot rows per part
PROMPT = "You are a careful assistant who answers briefly. " * 6

# One rollout n: its trace, start, agent and task ($lo..$hi); every relation below derives from it.
ROLLOUT_CTE = """
WITH r AS (
    SELECT n, md5('t' || n) AS trace_id, $t0 + n * $gap AS t0,
           CASE WHEN n % 2 = 0 THEN 'planner' ELSE 'coder' END AS agent,
           'task-' || (n % $tasks) AS task,
           ((n * 7919) % 5) / 4.0 AS reward, n % 7 = 3 AS tool_fails
    FROM range($lo, $hi) t(n)
)
"""


def _span_id(k: int | str) -> str:
    """SQL: the span id of span ``k`` of rollout ``n`` (0 root, 1-3 chat, 4-5 tools, 6 reward)."""
    return f"substr(md5('s' || n || '.' || {k}), 1, 16)"


# Span timing (ns after the rollout's start): chats k=1..3 at 0, 2, 4 s for 0.9 s; span k >= 4 at
# 6 s + k * 0.1 s for 50 ms; the root lasts 9 s.
START = "t0 + CASE WHEN k = 0 THEN 0 WHEN k <= 3 THEN (k - 1) * 2000000000 ELSE 6000000000 + k * 100000000 END"
END = ("t0 + CASE WHEN k = 0 THEN 9000000000 WHEN k <= 3 THEN (k - 1) * 2000000000 + 900000000 "
       "ELSE 6000000000 + k * 100000000 + 50000000 END")

SPANS_SQL = ROLLOUT_CTE + f"""
SELECT trace_id, {_span_id('k')} AS span_id,
       CASE WHEN k = 0 THEN NULL ELSE {_span_id(0)} END AS parent_span_id,
       CASE k WHEN 0 THEN 'invoke_agent ' || agent WHEN 4 THEN 'execute_tool search'
              WHEN 5 THEN 'execute_tool fetch' WHEN 6 THEN 'spanrl.reward' ELSE 'chat bench-model' END AS "name",
       CASE WHEN k BETWEEN 1 AND 3 THEN 'CLIENT' ELSE 'INTERNAL' END AS kind,
       {START} AS start_ns, {END} AS end_ns,
       CASE WHEN k = 4 AND tool_fails THEN 'ERROR' ELSE 'UNSET' END AS status_code,
       CASE WHEN k = 4 AND tool_fails THEN 'tool failed' END AS status_message,
       'bench' AS service_name,
       '{{"service.name":"bench"}}'::JSON AS resource,
       'bench' AS scope_name, NULL::VARCHAR AS scope_version,
       CASE
         WHEN k = 0 THEN json_object('gen_ai.operation.name', 'invoke_agent', 'gen_ai.agent.name', agent,
                                     'spanrl.rollout_id', 'r' || n)
         WHEN k <= 3 THEN json_object(
             'gen_ai.operation.name', 'chat', 'gen_ai.provider.name', 'openai',
             'gen_ai.request.model', 'bench-model', 'gen_ai.request.temperature', 0.7,
             'gen_ai.response.id', 'chatcmpl-' || n || '-' || k,
             'gen_ai.usage.input_tokens', 120 + k, 'gen_ai.usage.output_tokens', 12,
             'gen_ai.input.messages', to_json([
                 {{'role': 'system', 'parts': [{{'type': 'text', 'content': $prompt}}]}},
                 {{'role': 'user', 'parts': [{{'type': 'text', 'content': 'question ' || n || '.' || k
                                              || ' about ' || task}}]}}])::VARCHAR,
             'gen_ai.output.messages', to_json([
                 {{'role': 'assistant', 'parts': [{{'type': 'text', 'content': 'answer ' || n || '.' || k}}],
                  'finish_reason': 'stop'}}])::VARCHAR)
         WHEN k = 4 THEN json_object('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', 'search')
         WHEN k = 5 THEN json_object('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', 'fetch')
         ELSE json_object('spanrl.reward', reward, 'spanrl.task_id', task)
       END AS attributes,
       '[]'::JSON AS events, '[]'::JSON AS links,
       'traces-bench.jsonl' AS source_file, make_timestamp($ingested_us) AS ingested_at
FROM r, range(7) s(k)
WHERE k <> 5 OR n % 2 = 1
ORDER BY end_ns, span_id
"""

# The stage-2 tables, column for column as transitions/sql/** computes them from the spans above.
ROLLOUTS_SQL = ROLLOUT_CTE + """
SELECT 'r' || n AS rollout_id, task AS task_id, [trace_id] AS trace_ids, [agent] AS agent_names,
       3::BIGINT AS n_llm_calls, (1 + n % 2)::BIGINT AS n_tool_calls, tool_fails::BIGINT AS n_errors,
       reward::DOUBLE AS final_reward, t0 AS started_ns, t0 + 9000000000 AS ended_ns, NULL::VARCHAR AS purpose,
       NULL::VARCHAR AS prompt_version, true AS complete
FROM r
"""

LLM_CALLS_SQL = ROLLOUT_CTE + f"""
SELECT trace_id, {_span_id('k')} AS span_id, {_span_id(0)} AS parent_span_id,
       {START} AS start_ns, {END} AS end_ns, 'bench' AS service_name, agent AS agent_name,
       'genai_semconv_latest' AS convention, 'openai' AS provider, 'bench-model' AS model,
       to_json([{{'role': 'system', 'content': $prompt}},
                {{'role': 'user', 'content': 'question ' || n || '.' || k || ' about ' || task}}]) AS input_messages,
       to_json({{'role': 'assistant', 'content': 'answer ' || n || '.' || k}}) AS output_message,
       NULL::JSON AS tools, 'stop' AS finish_reason, (120 + k)::BIGINT AS input_tokens, 12::BIGINT AS output_tokens,
       NULL::INTEGER[] AS prompt_token_ids, NULL::INTEGER[] AS response_token_ids, NULL::FLOAT[] AS response_logprobs,
       0.7::DOUBLE AS temperature, 'chatcmpl-' || n || '-' || k AS response_id, 'UNSET' AS status_code,
       0::INTEGER AS restored_messages, []::STRUCT(trace_id VARCHAR, span_id VARCHAR)[] AS merged_spans,
       NULL::VARCHAR AS prompt_version
FROM r, range(1, 4) s(k)
"""

TOOL_CALLS_SQL = ROLLOUT_CTE + f"""
SELECT trace_id, {_span_id('k')} AS span_id, {_span_id(3)} AS llm_span_id,
       CASE k WHEN 4 THEN 'search' ELSE 'fetch' END AS tool_name, NULL::VARCHAR AS arguments,
       NULL::VARCHAR AS result, CASE WHEN k = 4 AND tool_fails THEN 'ERROR' ELSE 'UNSET' END AS status_code,
       CASE WHEN k = 4 AND tool_fails THEN 'tool failed' END AS error_type,
       {START} AS start_ns, {END} AS end_ns, NULL::VARCHAR AS tool_call_id, false AS is_handoff
FROM r, range(4, 6) s(k)
WHERE k = 4 OR n % 2 = 1
"""

REWARDS_SQL = ROLLOUT_CTE + f"""
SELECT trace_id, {_span_id(6)} AS span_id, 'r' || n AS rollout_id, 'reward' AS "name", reward::DOUBLE AS "value",
       'span' AS source, t0 + 6650000000 AS ts_ns, {_span_id(0)} AS target_span_id, false AS is_primary
FROM r
UNION ALL
SELECT trace_id, {_span_id(4)}, 'r' || n, 'tool_error', -0.2::DOUBLE, 'air', t0 + 6400000000, {_span_id(3)}, false
FROM r WHERE tool_fails
"""

TABLE_SQL = {"rollouts": ROLLOUTS_SQL, "llm_calls": LLM_CALLS_SQL, "tool_calls": TOOL_CALLS_SQL,
             "rewards": REWARDS_SQL}

# One snapshot row per chat call of every rollout; step reward -0.2 on the call before a failed tool.
SNAPSHOT_SQL = """
SELECT 'r' || n AS rollout_id, 'task-' || (n % $tasks) AS task_id, md5('t' || n) AS trace_id,
       substr(md5('s' || n || '.' || (k + 1)), 1, 16) AS span_id, k AS step, 3 AS n_steps,
       CASE WHEN n % 2 = 0 THEN 'planner' ELSE 'coder' END AS agent_name, 'bench-model' AS model,
       '[]' AS prompt_messages, '[]' AS tools, '{"role":"assistant","content":"answer"}' AS response_message,
       NULL::INTEGER[] AS prompt_token_ids, NULL::INTEGER[] AS response_token_ids,
       NULL::FLOAT[] AS response_logprobs, 'text' AS token_source, 0.7 AS temperature,
       ((n * 7919) % 5) / 4.0 AS final_reward,
       CASE WHEN k = 2 AND n % 7 = 3 THEN -0.2 ELSE 0.0 END AS step_reward,
       ((n * 7919) % 5) / 4.0 AS "return", ((n * 7919) % 5) / 4.0 - 0.5 AS advantage, k = 2 AS is_last,
       ['traces-bench.jsonl'] AS source_files
FROM range($lo, $hi) t(n), range(3) s(k)
"""


def _params(lo: int, hi: int, rollouts: int) -> dict:
    # every span was ingested an hour after the last rollout ended: all rollouts are complete
    ingested_us = (T0_NS + rollouts * ROLLOUT_GAP_NS) // 1000 + 3_600_000_000
    return {"lo": lo, "hi": hi, "t0": T0_NS, "gap": ROLLOUT_GAP_NS, "tasks": N_TASKS, "prompt": PROMPT,
            "ingested_us": ingested_us}


def _connection(data: Path, threads: int) -> duckdb.DuckDBPyConnection:
    spill = data / "lake" / "_tmp"
    spill.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET memory_limit = '1GB'")
    con.execute(f"SET temp_directory = '{spill}'")
    con.execute("SET enable_progress_bar = false")
    return con


def write_lake(data: Path, rollouts: int, threads: int = 2) -> int:
    """``lake/spans/date=2026-01-01/part-*.parquet`` for ``rollouts`` rollouts (files already there are
    kept: a second run resumes); returns the spans in the lake."""
    folder = data / "lake" / "spans" / "date=2026-01-01"
    folder.mkdir(parents=True, exist_ok=True)
    (data / "lake" / "logs").mkdir(exist_ok=True)
    con = _connection(data, threads)
    for i, lo in enumerate(range(0, rollouts, CHUNK)):
        out = folder / f"part-{i:05d}.parquet"
        if out.is_file():
            continue
        tmp = out.with_suffix(".tmp")
        con.execute(f"COPY ({SPANS_SQL}) TO '{tmp}' (FORMAT parquet, COMPRESSION zstd, "
                    f"ROW_GROUP_SIZE {ROW_GROUP_SIZE})", _params(lo, min(rollouts, lo + CHUNK), rollouts))
        os.replace(tmp, out)
    return con.execute(f"SELECT count(*) FROM read_parquet('{folder}/*.parquet')").fetchall()[0][0]


def write_stage2_tables(data: Path, rollouts: int, threads: int = 2) -> Path:
    """The stage-2 tables a nightly ingest leaves (``transitions/_tables/<build>/``), published by
    ``write_tables`` (which writes each in the order the UI's lookups prune row groups by); kept
    when a build is already there."""
    from spanrl.publish import read_pointer
    from spanrl.transitions.snapshot import new_snapshot_id
    from spanrl.transitions.tables import tables_dir, write_tables

    build = read_pointer(tables_dir(data))
    if build is not None:
        return tables_dir(data) / build
    con = _connection(data, threads)
    params = _params(0, rollouts, rollouts)
    for name, sql in TABLE_SQL.items():  # views: COPY streams them, nothing is held in memory
        con.execute(f"CREATE VIEW {name} AS {_inline(sql, params)}")
    return write_tables(con, data, new_snapshot_id(), {"generated_by": "bench/ui_lake.py", "rollouts": rollouts})


def _inline(sql: str, params: dict) -> str:
    """A view cannot take bound parameters: paste the (numbers and fixed text) values in."""
    for key in sorted(params, key=len, reverse=True):
        value = params[key]
        sql = sql.replace(f"${key}", str(value) if isinstance(value, int) else "'" + value.replace("'", "''") + "'")
    return sql


def write_snapshot_rows(data: Path, rollouts: int, threads: int = 2) -> str:
    """One snapshot over every rollout through the transitions writer, its rows in (rollout_id, step)
    order and ``ROWS_PER_PART`` to a part; returns its id (LATEST's when
    one is already there)."""
    import pyarrow as pa

    from spanrl.transitions import open_snapshot
    from spanrl.transitions.snapshot import latest_manifest

    latest = latest_manifest(data)
    if latest is not None:
        return latest["snapshot_id"]
    con = _connection(data, threads)
    params = {"lo": 0, "hi": rollouts, "tasks": N_TASKS}
    reader = con.sql(f"SELECT NULL AS snapshot_id, * FROM ({SNAPSHOT_SQL}) ORDER BY rollout_id, step",
                     params=params).to_arrow_reader(ROWS_PER_PART)
    with open_snapshot(data) as draft:
        sid = None
        for i, batch in enumerate(_rechunk(reader, ROWS_PER_PART)):
            if sid is None or len(sid) != batch.num_rows:
                sid = pa.array([draft.snapshot_id] * batch.num_rows, pa.string())
            draft.write_part(batch.set_column(0, "snapshot_id", sid), i)
        draft.commit({"air_rules": [{"name": "tool_error", "when": "is_tool AND is_error", "value": -0.2}]},
                     ["traces-bench.jsonl"], {"rollouts": rollouts})
        return draft.snapshot_id


def _rechunk(reader, rows: int):
    """Tables of exactly ``rows`` rows (the last one shorter) from a record batch reader."""
    import pyarrow as pa

    pending, n = [], 0
    for batch in reader:
        pending.append(batch)
        n += batch.num_rows
        while n >= rows:
            table = pa.Table.from_batches(pending, schema=reader.schema)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, n = rest.to_batches(), rest.num_rows
    if n:
        yield pa.Table.from_batches(pending, schema=reader.schema)


def write_cycles(data: Path, snapshot_id: str, cycles: int = 5) -> None:
    """A cycle log as ``spanrl train`` appends it, every cycle on the bench snapshot (kept when present)."""
    from spanrl.trainer.adapter import adapters_dir, append_cycle_line

    if (adapters_dir(data) / "cycles.jsonl").is_file():
        return
    adapters_dir(data).mkdir(parents=True, exist_ok=True)
    for c in range(1, cycles + 1):
        append_cycle_line(adapters_dir(data), {
            "cycle": c, "cycle_id": f"{c:04d}-bench", "snapshot_id": snapshot_id, "loss": "pg",
            "train_loss": 0.5 / c, "response_tokens": 1000 * c, "mean_final_reward": 0.4 + 0.05 * c,
            "time_s": 60.0})


def write_data_root(data: Path, rollouts: int, threads: int = 2) -> tuple[int, str]:
    """Everything above, in order (each step resumes); (spans in the lake, snapshot id)."""
    spans = write_lake(data, rollouts, threads)
    write_stage2_tables(data, rollouts, threads)
    snapshot_id = write_snapshot_rows(data, rollouts)
    write_cycles(data, snapshot_id)
    return spans, snapshot_id
