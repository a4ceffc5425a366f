-- name: coverage_empty
-- coverage when no segment holds any: every column of a segment's coverage, no rows.
-- reads:
-- creates: coverage
SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS span_id, NULL::VARCHAR AS span_name,
       NULL::VARCHAR AS convention, NULL::VARCHAR AS scope_name, NULL::VARCHAR AS scope_version,
       NULL::BOOLEAN AS missing_input, NULL::BOOLEAN AS missing_output, NULL::BOOLEAN AS missing_tool_schema,
       NULL::VARCHAR[] AS attribute_keys, NULL::VARCHAR[] AS event_names,
       NULL::STRUCT(span_id VARCHAR, "key" VARCHAR, reason VARCHAR)[] AS unreadable
WHERE false
