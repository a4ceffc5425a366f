-- name: _new_logs($files)
-- The trace ids and response ids of log records in the lake files that appeared since the last build
-- (a log record without a trace id counts for the call whose response id it names; seeds.sql).
CREATE OR REPLACE TEMP TABLE _new_logs AS
SELECT DISTINCT nullif(trace_id, '') AS trace_id, attributes->>'gen_ai.response.id' AS response_id
FROM read_parquet($files::VARCHAR[], union_by_name = true)
