"""A synthetic data root for ``bench/ui.py``: lake Parquet rows written straight by DuckDB.

Going through span files and ``spanrl ingest`` costs minutes per million spans on 2 cores; the UI
benchmark only needs lake rows with the lake's columns (``ingest/sql/spans_empty.sql``), so one
DuckDB ``COPY`` per chunk writes them from ``range()``. Each rollout is one trace in the shape of
``bench/ingest.py``'s agent: an ``invoke_agent`` root (agent ``planner`` or ``coder``), three GenAI
``chat`` spans (semconv >= 1.37 messages, ~300 B prompts), one or two ``execute_tool`` spans (every
7th rollout's tool fails: an AIR ``tool_error`` hit) and a ``spanrl.reward`` span with the task id:
6-7 spans per rollout. A snapshot over the same rollouts is written through ``spanrl.transitions``'
writer (one row per call), and a cycle log through ``spanrl.trainer.adapter``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

T0_NS = 1_767_225_600_000_000_000  # 2026-01-01
ROLLOUT_GAP_NS = 1_000_000_000  # one rollout starts every second: 1M rollouts ~ 11.6 days
N_TASKS = 500

# One row per (rollout n, span k): k 0 root, 1-3 chat, 4 tool, 5 second tool (odd n only), 6 reward.
SPANS_SQL = """
WITH r AS (
    SELECT n, md5('t' || n) AS trace_id, $t0 + n * $gap AS t0,
           CASE WHEN n % 2 = 0 THEN 'planner' ELSE 'coder' END AS agent,
           'task-' || (n % $tasks) AS task
    FROM range($lo, $hi) t(n)
),
k AS (SELECT k FROM range(7) t(k))
SELECT trace_id,
       substr(md5('s' || n || '.' || k), 1, 16) AS span_id,
       CASE WHEN k = 0 THEN NULL ELSE substr(md5('s' || n || '.0'), 1, 16) END AS parent_span_id,
       CASE k WHEN 0 THEN 'invoke_agent ' || agent WHEN 4 THEN 'execute_tool search'
              WHEN 5 THEN 'execute_tool fetch' WHEN 6 THEN 'spanrl.reward' ELSE 'chat bench-model' END AS "name",
       CASE WHEN k BETWEEN 1 AND 3 THEN 'CLIENT' ELSE 'INTERNAL' END AS kind,
       t0 + CASE WHEN k = 0 THEN 0 WHEN k <= 3 THEN (k - 1) * 2000000000 ELSE 6000000000 + k * 100000000 END
           AS start_ns,
       t0 + CASE WHEN k = 0 THEN 9000000000 WHEN k <= 3 THEN (k - 1) * 2000000000 + 900000000
                 ELSE 6000000000 + k * 100000000 + 50000000 END AS end_ns,
       CASE WHEN k = 4 AND n % 7 = 3 THEN 'ERROR' ELSE 'UNSET' END AS status_code,
       CASE WHEN k = 4 AND n % 7 = 3 THEN 'tool failed' END AS status_message,
       'bench' AS service_name,
       '{"service.name":"bench"}'::JSON AS resource,
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
                 {'role': 'system', 'parts': [{'type': 'text', 'content': $prompt}]},
                 {'role': 'user', 'parts': [{'type': 'text', 'content': 'question ' || n || '.' || k
                                              || ' about ' || task}]}])::VARCHAR,
             'gen_ai.output.messages', to_json([
                 {'role': 'assistant', 'parts': [{'type': 'text', 'content': 'answer ' || n || '.' || k}],
                  'finish_reason': 'stop'}])::VARCHAR)
         WHEN k = 4 THEN json_object('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', 'search')
         WHEN k = 5 THEN json_object('gen_ai.operation.name', 'execute_tool', 'gen_ai.tool.name', 'fetch')
         ELSE json_object('spanrl.reward', ((n * 7919) % 5) / 4.0, 'spanrl.task_id', task)
       END AS attributes,
       '[]'::JSON AS events, '[]'::JSON AS links,
       'traces-bench.jsonl' AS source_file, TIMESTAMP '2026-01-01' AS ingested_at
FROM r, k
WHERE k <> 5 OR n % 2 = 1
"""

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

CHUNK = 100_000  # rollouts per Parquet file (~650k spans): bounded memory while writing


def write_lake(data: Path, rollouts: int, threads: int = 2) -> int:
    """``lake/spans/date=2026-01-01/part-*.parquet`` for ``rollouts`` rollouts; returns spans written."""
    folder = data / "lake" / "spans" / "date=2026-01-01"
    folder.mkdir(parents=True, exist_ok=True)
    (data / "lake" / "logs").mkdir(exist_ok=True)
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute("SET preserve_insertion_order = false")
    spans = 0
    for i, lo in enumerate(range(0, rollouts, CHUNK)):
        hi = min(rollouts, lo + CHUNK)
        out = folder / f"part-{i:05d}.parquet"
        params = {"lo": lo, "hi": hi, "t0": T0_NS, "gap": ROLLOUT_GAP_NS, "tasks": N_TASKS,
                  "prompt": "You are a careful assistant who answers briefly. " * 6}
        # ordered by trace then time, as the lake's own writer does: row groups stay trace-local
        con.execute(f"COPY ({SPANS_SQL} ORDER BY trace_id, start_ns) TO '{out}' "
                    "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)", params)
        spans += con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
    return spans


def write_snapshot_rows(data: Path, rollouts: int) -> str:
    """One snapshot over every rollout, through the transitions writer; returns its id."""
    from spanrl.transitions import open_snapshot

    con = duckdb.connect()
    with open_snapshot(data) as draft:
        for i, lo in enumerate(range(0, rollouts, CHUNK)):
            params = {"lo": lo, "hi": min(rollouts, lo + CHUNK), "tasks": N_TASKS}
            table = con.sql(f"SELECT NULL AS snapshot_id, * FROM ({SNAPSHOT_SQL})", params=params).to_arrow_table()
            draft.write_part(table.set_column(0, "snapshot_id", _const(draft.snapshot_id, table.num_rows)), i)
        draft.commit({"air_rules": [{"name": "tool_error", "when": "is_tool AND is_error", "value": -0.2}]},
                     ["traces-bench.jsonl"], {"rollouts": rollouts})
        return draft.snapshot_id


def write_cycles(data: Path, snapshot_id: str, cycles: int = 5) -> None:
    """A cycle log as ``spanrl train`` appends it, every cycle on the bench snapshot."""
    from spanrl.trainer.adapter import adapters_dir, append_cycle_line

    adapters_dir(data).mkdir(parents=True, exist_ok=True)
    for c in range(1, cycles + 1):
        append_cycle_line(adapters_dir(data), {
            "cycle": c, "cycle_id": f"{c:04d}-bench", "snapshot_id": snapshot_id, "loss": "pg",
            "train_loss": 0.5 / c, "response_tokens": 1000 * c, "mean_final_reward": 0.4 + 0.05 * c,
            "time_s": 60.0})


def _const(value: str, n: int):
    import pyarrow as pa

    return pa.array([value] * n, pa.string())
