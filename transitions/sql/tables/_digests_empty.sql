-- name: _digests_empty
-- _digests when no segment holds any: the columns of digests.parquet (snapshot/rollout_digests.sql), no rows.
CREATE TABLE _digests (rollout_id VARCHAR, task_id VARCHAR, r DOUBLE, n_rows BIGINT, source_files VARCHAR[],
                       digest VARCHAR)
