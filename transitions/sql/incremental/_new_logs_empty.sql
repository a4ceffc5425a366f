-- name: _new_logs_empty
-- _new_logs when no lake log file appeared since the last build.
CREATE OR REPLACE TEMP TABLE _new_logs AS SELECT NULL::VARCHAR AS trace_id, NULL::VARCHAR AS response_id WHERE false
