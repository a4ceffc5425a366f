-- name: _rollout_calls
-- Every LLM call (llm_calls view) with its rollout and its position in the rollout's span tree; a
-- call without an agent takes the one hierarchy repair found for it (_agent_repairs).
-- reads: llm_calls, _span_tree, _agent_repairs
-- creates: _rollout_calls
SELECT t.rollout_id, t.order_path, c.* REPLACE (coalesce(c.agent_name, r.agent_name) AS agent_name)
FROM llm_calls c
JOIN _span_tree t USING (trace_id, span_id)
LEFT JOIN _agent_repairs r USING (trace_id, span_id)
