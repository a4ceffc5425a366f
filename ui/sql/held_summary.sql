-- name: held_summary
-- One narrow row per rollout with what the Rollouts, Tasks and Training-cycles pages filter, count
-- and sort by, in compact types: what ``spanrl ui`` holds in memory (ui/data.py, ~120 B a rollout).
-- The rollouts row without its trace ids, plus its AIR hits (rewards) and its failed tool runs
-- (tool_calls with a span in error), so a page reads one in-memory table instead of joining the
-- stage-2 tables; and ``snapshots``: one bit per snapshot the server marked (mark_snapshot.sql).
WITH air AS (
    SELECT rollout_id, count(*) AS air_hits FROM rewards WHERE source = 'air' GROUP BY rollout_id
),
traces AS (
    SELECT rollout_id, unnest(trace_ids) AS trace_id FROM rollouts
),
tool_errors AS (
    SELECT t.rollout_id, count(*) AS n_tool_errors
    FROM tool_calls tc JOIN traces t USING (trace_id)
    WHERE tc.span_id IS NOT NULL AND spanrl_is_error(tc.status_code)
    GROUP BY t.rollout_id
)
SELECT r.rollout_id, r.task_id, r.agent_names, r.n_llm_calls::INTEGER AS n_llm_calls,
       r.n_tool_calls::INTEGER AS n_tool_calls, r.n_errors::INTEGER AS n_errors,
       coalesce(e.n_tool_errors, 0)::INTEGER AS n_tool_errors, coalesce(a.air_hits, 0)::INTEGER AS air_hits,
       r.final_reward, r.started_ns, r.ended_ns, r.complete, 0::UTINYINT AS snapshots
FROM rollouts r
LEFT JOIN air a USING (rollout_id)
LEFT JOIN tool_errors e USING (rollout_id)
