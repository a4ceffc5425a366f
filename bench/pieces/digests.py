"""The per-rollout digests (transitions/sql/snapshot/rollout_digests.sql): sha256, the rows as text, the ordered
string_agg, and DuckDB's hash() (fast, but not stable across DuckDB versions: readers re-hash elsewhere)."""

BEFORE = "-- name: rollout_digests"
COLS = ("rollout_id, task_id, trace_id, span_id, step, n_steps, agent_name, model, prompt_messages, tools, "
        "response_message, finish_reason, prompt_token_ids, response_token_ids, response_logprobs, token_source, "
        'temperature, final_reward, step_reward, "return", advantage, is_last, source_files')
VARIANTS = {
    "the statement's query": lambda q: f"SELECT count(*), max(digest) FROM ({q[q.index('(') + 1:q.rindex(') TO')]})",
    "rows -> text only": f"SELECT sum(strlen(CAST(ROW({COLS}) AS VARCHAR))) FROM transition_rows",
    "string_agg, no sha256": f"SELECT sum(n) FROM (SELECT strlen(string_agg(CAST(ROW({COLS}) AS VARCHAR), chr(10) "
                             "ORDER BY step)) AS n FROM transition_rows GROUP BY rollout_id)",
    "sha256 per row": f"SELECT max(sha256(CAST(ROW({COLS}) AS VARCHAR))) FROM transition_rows",
    "hash() per row": f"SELECT max(h) FROM (SELECT list(hash(ROW({COLS})) ORDER BY step) AS h FROM transition_rows "
                      "GROUP BY rollout_id)",
}
