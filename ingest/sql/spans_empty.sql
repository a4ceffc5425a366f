-- name: spans_empty
-- The spans table of a lake that holds no span yet (same columns as spans_load.sql).
CREATE OR REPLACE TABLE spans (
    trace_id VARCHAR, span_id VARCHAR, parent_span_id VARCHAR, "name" VARCHAR, kind VARCHAR,
    start_ns BIGINT, end_ns BIGINT, status_code VARCHAR, status_message VARCHAR, service_name VARCHAR,
    resource JSON, scope_name VARCHAR, scope_version VARCHAR, attributes JSON, events JSON, links JSON,
    source_file VARCHAR, ingested_at TIMESTAMP, "date" VARCHAR)
