-- name: _p_rollouts(${files})
-- The last build's rollouts over its segments (rollouts.parquet): their traces and whether they were complete.
-- reads:
-- creates: _p_rollouts
SELECT rollout_id, trace_ids, complete FROM read_parquet(${files})
