-- name: _prior_trace_rollouts
-- The stored trace -> rollout pairs of every trace this run does not recompute (read by _feedback_rewards.sql).
CREATE OR REPLACE TEMP VIEW _prior_trace_rollouts AS
SELECT trace_id, rollout_id FROM _p_traces ANTI JOIN _touched USING (trace_id)
