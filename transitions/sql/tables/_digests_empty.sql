-- name: _digests_empty
-- _digests when no segment holds any: the columns of digests.parquet (snapshot/rollout_digests.sql), no rows.
-- reads:
-- creates: _digests
SELECT NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS task_id, NULL::DOUBLE AS r, NULL::BIGINT AS n_rows,
       NULL::VARCHAR[] AS source_files, NULL::VARCHAR AS digest
WHERE false
