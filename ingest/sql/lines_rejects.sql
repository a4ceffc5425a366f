-- name: lines_rejects
-- The lines of the `lines` table that are neither a trace nor a log batch.
SELECT line_no,
       CASE WHEN doc IS NULL AND torn THEN 'truncated line: the file ends mid-line (a torn write)'
            WHEN doc IS NULL THEN 'not JSON'
            ELSE 'wrong shape: expected an OTLP batch {"resourceSpans":[...]} or {"resourceLogs":[...]}'
       END AS error,
       left(line, 200) AS excerpt
FROM lines
WHERE doc IS NULL
   OR (try_cast(doc AS STRUCT(resourceSpans otlp_resource_spans[])).resourceSpans IS NULL
       AND try_cast(doc AS STRUCT(resourceLogs otlp_resource_logs[])).resourceLogs IS NULL)
ORDER BY line_no
