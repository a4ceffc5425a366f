-- name: rollouts_empty
-- rollouts when no segment holds any (a lake with no trace yet): every column of a segment's rollouts, no rows.
-- reads:
-- creates: rollouts
SELECT NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS task_id, NULL::VARCHAR[] AS trace_ids,
       NULL::VARCHAR[] AS agent_names, NULL::BIGINT AS n_llm_calls, NULL::BIGINT AS n_tool_calls,
       NULL::BIGINT AS n_errors, NULL::DOUBLE AS final_reward, NULL::BIGINT AS started_ns,
       NULL::BIGINT AS ended_ns, NULL::VARCHAR AS purpose,
       NULL::VARCHAR AS prompt_version, NULL::BOOLEAN AS complete
WHERE false
