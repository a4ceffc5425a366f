-- name: _prior_rollout_ids
-- The stored rollouts this run does not recompute (read by _feedback_rewards.sql); _touched is closed over
-- rollouts, so a stored rollout is recomputed exactly when its first trace is. A view: only feedback probes it.
-- reads: _p_rollouts, _touched
-- creates: _prior_rollout_ids
SELECT r.rollout_id FROM _p_rollouts r ANTI JOIN _touched t ON t.trace_id = r.trace_ids[1]
