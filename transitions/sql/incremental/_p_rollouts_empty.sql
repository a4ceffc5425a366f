-- name: _p_rollouts_empty
-- _p_rollouts when no earlier build stored any (the columns of _p_rollouts.sql).
CREATE OR REPLACE TEMP TABLE _p_rollouts (rollout_id VARCHAR, trace_ids VARCHAR[], complete BOOLEAN)
