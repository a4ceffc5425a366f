-- name: rollouts
-- One row per agent run (docs/lake.md). final_reward: the rollout's primary reward (named primary, else
-- the last explicit reward by time; feedback without a time counts as newest); NULL when it has none.
-- prompt_version: the stored prompts `spanrl gateway --prompts` put into its calls, <agent>@<version> (comma-joined).
-- reads: tool_calls, _span_tree, _rollout_status, _rollout_tasks, _rollout_calls, _explicit_rewards, _feedback_rewards
-- creates: rollouts
WITH final AS (
    SELECT rollout_id,
           arg_max(value, (is_primary, coalesce(ts_ns, 9223372036854775807), source, span_id, name, value))
               AS final_reward
    FROM (SELECT rollout_id, value, is_primary, ts_ns, source, span_id, name FROM _explicit_rewards
          UNION ALL
          SELECT rollout_id, value, is_primary, ts_ns, source, span_id, name FROM _feedback_rewards)
    WHERE rollout_id IS NOT NULL  -- explicit rewards only (AIR rewards are per step, never final)
    GROUP BY rollout_id
),
calls AS (
    SELECT rollout_id, count(*) AS n_llm_calls,
           list(DISTINCT agent_name ORDER BY agent_name) FILTER (WHERE agent_name IS NOT NULL) AS agent_names,
           string_agg(DISTINCT prompt_version, ',' ORDER BY prompt_version) AS prompt_version
    FROM _rollout_calls GROUP BY rollout_id
),
tools AS (
    SELECT r.rollout_id, count(*) AS n_tool_calls
    FROM tool_calls tc JOIN _span_tree r USING (trace_id, span_id) GROUP BY r.rollout_id
),
errors AS (
    SELECT rollout_id, count(*) FILTER (WHERE spanrl_is_error(status_code)) AS n_errors
    FROM _span_tree GROUP BY rollout_id
)
SELECT st.rollout_id, t.task_id, st.trace_ids,
       coalesce(c.agent_names, []) AS agent_names,
       coalesce(c.n_llm_calls, 0) AS n_llm_calls,
       coalesce(tl.n_tool_calls, 0) AS n_tool_calls,
       coalesce(e.n_errors, 0) AS n_errors,
       f.final_reward, st.started_ns, st.ended_ns, t.purpose, c.prompt_version, st.complete
FROM _rollout_status st
LEFT JOIN _rollout_tasks t USING (rollout_id)
LEFT JOIN final f USING (rollout_id)
LEFT JOIN calls c USING (rollout_id)
LEFT JOIN tools tl USING (rollout_id)
LEFT JOIN errors e USING (rollout_id)
