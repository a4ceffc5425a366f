-- name: _prior_responses
-- The stored response ids of every trace this run does not recompute (read by _feedback_rewards.sql).
-- reads: _p_responses, _touched
-- creates: _prior_responses
SELECT response_id, trace_id, span_id, rollout_id FROM _p_responses ANTI JOIN _touched USING (trace_id)
