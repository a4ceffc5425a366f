-- name: shard_span_files($files, $traces)
-- The lake's span files that hold one of a shard's traces: what its task on an S3 root fetches (shards.py).
SELECT DISTINCT filename
FROM read_parquet($files::VARCHAR[], filename = true, union_by_name = true)
WHERE trace_id IN (SELECT unnest($traces::VARCHAR[]))
