-- name: lake_clocks($files)
-- The clock each lake span file contributes (its newest span end or ingest time, ns), read once per file.
SELECT filename, greatest(max(end_ns), max(epoch_ns(ingested_at))) AS clock_ns
FROM read_parquet($files::VARCHAR[], filename = true, union_by_name = true)
GROUP BY filename
