-- name: logs_load($ingested_at)
-- OTLP log batches -> one row per log record (GenAI events may live here).
-- Reads the view `log_batches(resourceLogs otlp_resource_logs[], source_file, line_no)`.
-- Parameter: $ingested_at. A bad line (resourceLogs NULL) yields a row with date NULL.
SELECT
    otlp_id(b.lr.traceId, 16) AS trace_id,
    otlp_id(b.lr.spanId, 8) AS span_id,
    otlp_ns(b.lr.timeUnixNano) AS time_ns,
    otlp_ns(b.lr.observedTimeUnixNano) AS observed_time_ns,
    coalesce(try_cast(b.lr.severityNumber AS INTEGER), 0) AS severity_number,
    nullif(b.lr.severityText, '') AS severity_text,
    otlp_plain(b.lr.body) AS body,
    otlp_attrs_deep(b.lr.attributes) AS attributes,
    coalesce(nullif(b.lr.eventName, ''),
             json_extract_string(otlp_scalar(list_filter(b.lr.attributes, lambda kv: kv."key" = 'event.name')[1]."value"), '$'))
        AS event_name,
    otlp_attrs_flat(b.resource.attributes) AS resource,
    b.scope."name" AS scope_name,
    otlp_service_name(b.resource.attributes) AS service_name,
    b.source_file AS source_file,
    CAST($ingested_at AS TIMESTAMP) AS ingested_at,
    b.line_no AS line_no,
    CASE WHEN b.lr IS NULL THEN NULL
         ELSE otlp_date(coalesce(nullif(otlp_ns(b.lr.timeUnixNano), 0), otlp_ns(b.lr.observedTimeUnixNano))) END AS "date"
FROM (
    SELECT r.resource, s.scope, unnest(CASE WHEN s IS NULL THEN [NULL] ELSE coalesce(s.logRecords, []) END) AS lr,
           r.source_file, r.line_no
    FROM (
        SELECT rl.resource AS resource, unnest(CASE WHEN rl IS NULL THEN [NULL] ELSE coalesce(rl.scopeLogs, []) END) AS s,
               source_file, line_no
        FROM (SELECT unnest(CASE WHEN resourceLogs IS NULL THEN [NULL] ELSE resourceLogs END) AS rl, source_file, line_no
              FROM log_batches) AS x
    ) AS r
) AS b
