-- name: _rollout_calls
-- Every LLM call (llm_calls view) with its rollout and its position in the rollout's span tree.
SELECT t.rollout_id, t.order_path, c.*
FROM llm_calls c JOIN _span_tree t USING (trace_id, span_id)
