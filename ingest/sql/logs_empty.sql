-- name: logs_empty
-- The logs table of a lake that holds no log record yet (same columns as logs_load.sql).
CREATE OR REPLACE TABLE logs (
    trace_id VARCHAR, span_id VARCHAR, time_ns BIGINT, observed_time_ns BIGINT, severity_number INTEGER,
    severity_text VARCHAR, body JSON, attributes JSON, event_name VARCHAR, resource JSON, scope_name VARCHAR,
    service_name VARCHAR, source_file VARCHAR, ingested_at TIMESTAMP, "date" VARCHAR)
