-- name: _new_logs(${files})
-- The trace ids and response ids of log records in the lake files that appeared since the last build
-- (a log record without a trace id counts for the call whose response id it names; seeds.sql).
-- reads:
-- creates: _new_logs
SELECT DISTINCT nullif(trace_id, '') AS trace_id, attributes->>'gen_ai.response.id' AS response_id
FROM read_parquet(${files}, union_by_name = true)
