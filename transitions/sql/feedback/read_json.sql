-- name: read_json($first, $path)
-- The rows of one JSON lines (.jsonl, .json, .ndjson) feedback file as _feedback_raw rows: the known columns (missing ones NULL, from
-- the typed empty frame), each row numbered from $first (its line in the file).
SELECT $path, (row_number() OVER () - 1 + $first)::BIGINT, rollout_id, trace_id, response_id, name, value, ts
FROM (SELECT NULL::VARCHAR AS rollout_id, NULL::VARCHAR AS trace_id, NULL::VARCHAR AS response_id,
             NULL::VARCHAR AS name, NULL::VARCHAR AS value, NULL::VARCHAR AS ts WHERE false
      UNION ALL BY NAME SELECT * FROM read_json($path, format = 'newline_delimited', union_by_name = true, sample_size = -1))
