-- name: _p_rollouts_empty
-- _p_rollouts when no earlier build stored any (the columns of _p_rollouts.sql).
-- reads:
-- creates: _p_rollouts
SELECT NULL::VARCHAR AS rollout_id, NULL::VARCHAR[] AS trace_ids, NULL::BOOLEAN AS complete
WHERE false
