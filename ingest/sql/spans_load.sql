-- name: spans_load($ingested_at)
-- OTLP trace batches -> one row per span (docs/lake.md).
-- Reads the view `trace_batches(resourceSpans otlp_resource_spans[], source_file, line_no)` that the
-- loader points at read_ndjson (fast path) or at numbered lines (slow path). Parameter: $ingested_at.
-- A bad line (resourceSpans NULL) or a span without ids yields a row with date NULL: the loader
-- takes that as "this file needs the line-numbered path" and records rejects from it.
-- The resource is converted once per resourceSpans entry, before its spans are unnested (a batch
-- holds hundreds of spans of one resource: 4-10 % of stage 1's CPU time against converting it per span).
SELECT
    otlp_id(b.sp.traceId, 16) AS trace_id,
    otlp_id(b.sp.spanId, 8) AS span_id,
    otlp_id(b.sp.parentSpanId, 8) AS parent_span_id,
    b.sp."name" AS "name",
    otlp_span_kind(b.sp.kind) AS kind,
    otlp_ns(b.sp.startTimeUnixNano) AS start_ns,
    otlp_ns(b.sp.endTimeUnixNano) AS end_ns,
    otlp_status_code(b.sp.status.code) AS status_code,
    nullif(b.sp.status.message, '') AS status_message,
    b.service_name AS service_name,
    b.resource AS resource,
    b.scope."name" AS scope_name,
    nullif(b.scope."version", '') AS scope_version,
    otlp_attrs(b.sp.attributes) AS attributes,
    to_json(list_transform(coalesce(b.sp.events, []), lambda e: {
        'time_ns': otlp_ns(e.timeUnixNano), 'name': e."name", 'attributes': otlp_attrs_deep(e.attributes)})) AS events,
    to_json(list_transform(coalesce(b.sp.links, []), lambda l: {
        'trace_id': otlp_id(l.traceId, 16), 'span_id': otlp_id(l.spanId, 8),
        'attributes': otlp_attrs_flat(l.attributes)})) AS links,
    b.source_file AS source_file,
    CAST($ingested_at AS TIMESTAMP) AS ingested_at,
    b.line_no AS line_no,
    CASE WHEN otlp_id(b.sp.traceId, 16) IS NULL OR otlp_id(b.sp.spanId, 8) IS NULL THEN NULL
         ELSE otlp_date(otlp_ns(b.sp.startTimeUnixNano)) END AS "date"
FROM (
    SELECT r.service_name, r.resource, s.scope, unnest(CASE WHEN s IS NULL THEN [NULL] ELSE coalesce(s.spans, []) END) AS sp,
           r.source_file, r.line_no
    FROM (
        SELECT otlp_service_name(rs.resource.attributes) AS service_name, otlp_attrs_flat(rs.resource.attributes) AS resource,
               unnest(CASE WHEN rs IS NULL THEN [NULL] ELSE coalesce(rs.scopeSpans, []) END) AS s,
               source_file, line_no
        FROM (SELECT unnest(CASE WHEN resourceSpans IS NULL THEN [NULL] ELSE resourceSpans END) AS rs, source_file, line_no
              FROM trace_batches) AS x
    ) AS r
) AS b
