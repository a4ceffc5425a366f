-- name: spans_dedupe(${staged}, ${lake})
-- The staged spans of this run, each (trace_id, span_id) once and only when the lake
-- does not hold it yet (exporter retries, a file copied twice). Literals: ${staged}, ${lake}.
SELECT * EXCLUDE (rn, filename, file_row_number)
FROM (
    SELECT s.*, row_number() OVER (PARTITION BY s.trace_id, s.span_id ORDER BY s.filename, s.file_row_number) AS rn
    FROM read_parquet(${staged}, filename = true, file_row_number = true, hive_partitioning = true) AS s
    WHERE NOT EXISTS (SELECT 1 FROM read_parquet(${lake}, hive_partitioning = true) AS l
                      WHERE l.trace_id = s.trace_id AND l.span_id = s.span_id)
)
WHERE rn = 1
