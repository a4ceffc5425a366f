-- name: segment_hits(${rollouts}, ${traces})
-- How many rows of an older segment (its _traces and rollouts files) a recomputed trace or rollout replaces.
SELECT (SELECT count(*) FROM read_parquet(${traces}) SEMI JOIN _touched USING (trace_id))
       + (SELECT count(*) FROM read_parquet(${rollouts}) SEMI JOIN _touched_rollouts USING (rollout_id)) AS hits
