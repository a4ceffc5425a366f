-- name: held_summary
-- The columns of rollout_summary the list pages read, in compact types: what ``spanrl ui`` holds in
-- memory per rollout (ui/data.py), plus ``snapshots``: one bit per snapshot the server marked
-- (mark_snapshot.sql), set when the rollout is in it.
SELECT rollout_id, task_id, agent_names, n_llm_calls::INTEGER AS n_llm_calls,
       n_tool_calls::INTEGER AS n_tool_calls, n_errors::INTEGER AS n_errors,
       n_tool_errors::INTEGER AS n_tool_errors, air_hits::INTEGER AS air_hits, final_reward,
       started_ns, ended_ns, complete, 0::UTINYINT AS snapshots
FROM rollout_summary
