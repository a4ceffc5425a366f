-- name: _new_spans(${files})
-- The traces with spans in the lake files that appeared since the last build (read by seeds.sql).
-- reads:
-- creates: _new_spans
SELECT DISTINCT trace_id FROM read_parquet(${files}, union_by_name = true)
