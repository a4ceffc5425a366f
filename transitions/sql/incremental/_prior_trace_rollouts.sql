-- name: _prior_trace_rollouts
-- The stored trace -> rollout pairs of every trace this run does not recompute (read by _feedback_rewards.sql).
-- reads: _p_traces, _touched
-- creates: _prior_trace_rollouts
SELECT trace_id, rollout_id FROM _p_traces ANTI JOIN _touched USING (trace_id)
