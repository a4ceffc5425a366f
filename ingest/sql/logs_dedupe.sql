-- name: logs_dedupe(${staged}, ${lake})
-- Staged log records, each once by content key, and only when not yet in the lake.
-- A log record has no id of its own: its key is a hash of what it says. Literals: ${staged}, ${lake}.
SELECT * EXCLUDE (rn, filename, file_row_number, k)
FROM (
    SELECT s.*, log_key(s) AS k,
           row_number() OVER (PARTITION BY log_key(s) ORDER BY s.filename, s.file_row_number) AS rn
    FROM read_parquet(${staged}, filename = true, file_row_number = true, hive_partitioning = true) AS s
    WHERE log_key(s) NOT IN (SELECT log_key(l) FROM read_parquet(${lake}, hive_partitioning = true) AS l)
)
WHERE rn = 1
