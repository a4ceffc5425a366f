-- logs_load: OTLP log batches -> one row per log record (GenAI events may live here).
-- Reads the view `log_batches(resourceLogs otlp_resource_logs[], source_file, line_no)`.
-- Parameter: $ingested_at. A bad line (resourceLogs NULL) yields a row with date NULL.
SELECT
    otlp_id(lr.traceId, 16) AS trace_id,
    otlp_id(lr.spanId, 8) AS span_id,
    otlp_ns(lr.timeUnixNano) AS time_ns,
    otlp_ns(lr.observedTimeUnixNano) AS observed_time_ns,
    coalesce(try_cast(lr.severityNumber AS INTEGER), 0) AS severity_number,
    nullif(lr.severityText, '') AS severity_text,
    otlp_plain(lr.body) AS body,
    otlp_attrs_deep(lr.attributes) AS attributes,
    coalesce(nullif(lr.eventName, ''),
             json_extract_string(otlp_scalar(list_filter(lr.attributes, lambda kv: kv."key" = 'event.name')[1]."value"), '$'))
        AS event_name,
    otlp_attrs_flat(rl.resource.attributes) AS resource,
    sl.scope."name" AS scope_name,
    otlp_service_name(rl.resource.attributes) AS service_name,
    b.source_file AS source_file,
    CAST($ingested_at AS TIMESTAMP) AS ingested_at,
    b.line_no AS line_no,
    CASE WHEN lr IS NULL THEN NULL
         ELSE otlp_date(coalesce(nullif(otlp_ns(lr.timeUnixNano), 0), otlp_ns(lr.observedTimeUnixNano))) END AS "date"
FROM log_batches AS b,
    unnest(CASE WHEN b.resourceLogs IS NULL THEN [NULL] ELSE b.resourceLogs END) AS r(rl),
    unnest(CASE WHEN rl IS NULL THEN [NULL] ELSE coalesce(rl.scopeLogs, []) END) AS s(sl),
    unnest(CASE WHEN sl IS NULL THEN [NULL] ELSE coalesce(sl.logRecords, []) END) AS p(lr)
