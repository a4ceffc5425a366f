-- name: read_csv($first, $path)
-- The rows of one CSV with a header line (all columns read as text) feedback file as _feedback_raw rows: the known columns (missing ones NULL, from
-- the typed empty frame), each row numbered from $first (its line in the file).
SELECT $path, (row_number() OVER () - 1 + $first)::BIGINT, rollout_id, trace_id, response_id, name, value, ts
FROM (SELECT NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS trace_id, NULL::VARCHAR AS response_id,
             NULL::VARCHAR AS name, NULL::VARCHAR AS value, NULL::VARCHAR AS ts WHERE false
      UNION ALL BY NAME SELECT * FROM read_csv($path, header = true, union_by_name = true, all_varchar = true))
