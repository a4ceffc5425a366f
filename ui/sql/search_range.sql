-- name: search_range
-- The time range the text search walks through in chunks (spans and log records).
SELECT min(t), max(t), sum(n) FROM (
    SELECT min(start_ns) AS t, count(*) AS n FROM spans
    UNION ALL SELECT max(start_ns), 0 FROM spans
    UNION ALL SELECT min(coalesce(time_ns, observed_time_ns)), count(*) FROM logs
    UNION ALL SELECT max(coalesce(time_ns, observed_time_ns)), 0 FROM logs)
