-- name: _new_spans($files)
-- The traces with spans in the lake files that appeared since the last build (read by seeds.sql).
CREATE OR REPLACE TEMP TABLE _new_spans AS
SELECT DISTINCT trace_id FROM read_parquet($files::VARCHAR[], union_by_name = true)
