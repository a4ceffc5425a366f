-- name: rollout_summary
-- One narrow row per rollout with what the Rollouts, Tasks and Training-cycles pages filter and
-- count by: the rollouts row without its trace ids, plus its AIR hits (rewards) and its failed tool
-- runs (tool_calls with a span in error). A build materialises it next to the stage-2 tables
-- (``spanrl.ui.data.create_rollout_summary``), so a page reads one table of small columns instead
-- of joining rollouts to rewards and tool_calls; without it the UI registers this as a view.
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
SELECT r.rollout_id, r.task_id, r.agent_names, r.n_llm_calls, r.n_tool_calls, r.n_errors,
       coalesce(e.n_tool_errors, 0) AS n_tool_errors, coalesce(a.air_hits, 0) AS air_hits,
       r.final_reward, r.started_ns, r.ended_ns, r.complete
FROM rollouts r
LEFT JOIN air a USING (rollout_id)
LEFT JOIN tool_errors e USING (rollout_id)
