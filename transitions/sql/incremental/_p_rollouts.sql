-- name: _p_rollouts(${files})
-- The last build's rollouts over its segments (rollouts.parquet): their traces and whether they were complete.
CREATE OR REPLACE TEMP VIEW _p_rollouts AS
SELECT rollout_id, trace_ids, complete FROM read_parquet(${files})
