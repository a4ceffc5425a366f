-- name: _traces(${files})
-- The build's per-trace bookkeeping and counts over every segment (_traces.parquet): the summary adds them up.
-- reads:
-- creates: _traces
SELECT * FROM read_parquet(${files}, union_by_name = true)
